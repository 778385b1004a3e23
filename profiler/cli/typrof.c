/*
 * typrof.c - the `typrof` command: `run` profiles any command (system monitor here, libtyprof
 * injected into the child through CUDA_INJECTION64_PATH), `report` prints the summary and writes
 * the HTML dashboard, `rules` evaluates the built-in rules. Messages follow git's style.
 *
 * Owns: the child process and the system monitor of a run. Exit status of `run` is the child's
 * (128+signal when it was killed).
 */
#define _GNU_SOURCE
#include "jsonmini.h"
#include "report_int.h"
#include "rules.h"
#include "typrof_int.h"
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_child;

static void usage(FILE *f)
{
    fputs("usage: typrof run [--interval MS] [--out DIR] [--node ID] [--no-gpu-trace] [--preload]"
          " -- CMD [ARG...]\n"
          "       typrof report DIR [--html FILE] [--max-trace-mb N]\n"
          "       typrof rules DIR [--rule NAME] [--param KEY=VALUE]... [--json]\n"
          "       typrof rules --list\n"
          "       typrof version\n"
          "\n"
          "run      profiles CMD: system metrics every MS ms (default $TYPROF_INTERVAL_MS or 500)\n"
          "         under DIR/system, CUDA activity and annotations of every process that loads\n"
          "         libtyprof under DIR/trace and DIR/summary, then DIR/summary.json\n"
          "         (DIR: --out, $TYPROF_OUT, /opt/ml/output/profiler if /opt/ml exists,\n"
          "         else ./typrof-out)\n"
          "report   prints the summary of DIR and writes DIR/report.html (self-contained)\n"
          "rules    evaluates SageMaker Debugger's profiler rules on DIR; exit 1 if issues\n",
          f);
}

static const char *default_out(void)
{
    const char *e = getenv("TYPROF_OUT");
    if (e && *e)
        return e;
    if (access("/opt/ml", W_OK) == 0)
        return "/opt/ml/output/profiler";
    return "typrof-out";
}

/* Finds libtyprof.so: $TYPROF_LIB, <exe>/../lib, <exe>. OUT: buf. Returns 0 or -1. */
static int find_lib(char *buf, size_t n)
{
    const char *e = getenv("TYPROF_LIB");
    if (e && *e && access(e, R_OK) == 0) {
        snprintf(buf, n, "%s", e);
        return 0;
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0)
        return -1;
    exe[len] = '\0';
    char *dir = dirname(exe);
    const char *rel[] = {"/../lib/libtyprof.so", "/libtyprof.so", "/../lib64/libtyprof.so"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(buf, n, "%s%s", dir, rel[i]);
        char *real = realpath(buf, NULL);
        if (real) {
            snprintf(buf, n, "%s", real);
            free(real);
            return 0;
        }
    }
    return -1;
}

/* SageMaker's container config: $SMPROFILER_CONFIG_PATH or
 * /opt/ml/input/config/profilerconfig.json. Keys are matched case-insensitively, as smdebug
 * lower-cases the file. */
struct pconf {
    int present, disabled;
    unsigned interval_ms;
    char local_path[1024];
    char rotate_bytes[32], rotate_secs[32];
};

static const char *pconf_path(void)
{
    const char *e = getenv("SMPROFILER_CONFIG_PATH");
    return e && *e ? e : "/opt/ml/input/config/profilerconfig.json";
}

static const struct jm_val *get_ci(const struct jm_val *o, const char *key)
{
    for (size_t i = 0; o && o->type == JM_OBJ && i < o->n; i++)
        if (!strcasecmp(o->keys[i], key))
            return &o->items[i];
    return NULL;
}

/* Number or numeric string value of key, else def. */
static double num_ci(const struct jm_val *o, const char *key, double def)
{
    const struct jm_val *v = get_ci(o, key);
    if (v && (v->type == JM_NUM || v->type == JM_BOOL))
        return v->num;
    if (v && v->type == JM_STR && *v->str) {
        if (!strcasecmp(v->str, "true"))
            return 1;
        if (!strcasecmp(v->str, "false"))
            return 0;
        char *end;
        double d = strtod(v->str, &end);
        if (!*end)
            return d;
    }
    return def;
}

/* Reads the config. OUT: *c (zeroed when absent or invalid). Returns 0 if read. */
static int pconf_read(struct pconf *c)
{
    size_t len;
    memset(c, 0, sizeof(*c));
    char *txt = jm_read_file(pconf_path(), 1 << 20, &len);
    struct jm_val *v = txt ? jm_parse(txt, len, NULL) : NULL;
    free(txt);
    if (!v)
        return -1;
    c->present = 1;
    c->disabled = num_ci(v, "DisableProfiler", 0) != 0;
    double iv = num_ci(v, "ProfilingIntervalInMilliseconds", 0);
    const struct jm_val *pp = get_ci(v, "ProfilingParameters");
    if (iv == 0)
        iv = num_ci(pp, "ProfilingIntervalInMilliseconds", 0);
    c->interval_ms = iv >= 10 && iv <= 3600000 ? (unsigned)iv : 0;
    const struct jm_val *lp = get_ci(pp, "LocalPath");
    if (lp && lp->type == JM_STR)
        snprintf(c->local_path, sizeof(c->local_path), "%s", lp->str);
    double rb = num_ci(pp, "RotateMaxFileSizeInBytes", 0);
    double rs = num_ci(pp, "RotateFileCloseIntervalInSeconds", 0);
    if (rb >= 1)
        snprintf(c->rotate_bytes, sizeof(c->rotate_bytes), "%.0f", rb);
    if (rs >= 1)
        snprintf(c->rotate_secs, sizeof(c->rotate_secs), "%.0f", rs);
    jm_free(v);
    return 0;
}

static void forward(int sig)
{
    if (g_child > 0)
        kill(g_child, sig);
}

static void prepend_env(const char *name, const char *value, char sep)
{
    const char *old = getenv(name);
    if (!old || !*old) {
        setenv(name, value, 1);
        return;
    }
    size_t n = strlen(old) + strlen(value) + 2;
    char *v = malloc(n);
    if (!v)
        return;
    snprintf(v, n, "%s%c%s", value, sep, old);
    setenv(name, v, 1);
    free(v);
}

/* The command's environment for libtyprof.so at lib: TYPROF_LIB, CUDA_INJECTION64_PATH (with
   gpu_trace), LD_PRELOAD (with preload), and the smprof shim's folder on PYTHONPATH. */
static void run_env_lib(const char *lib, int gpu_trace, int preload)
{
    char py[4200], libdir[4096];

    setenv("TYPROF_LIB", lib, 1);
    if (gpu_trace) {
        const char *old = getenv("CUDA_INJECTION64_PATH");
        if (old && *old && strcmp(old, lib))
            fprintf(stderr, "typrof: replacing CUDA_INJECTION64_PATH '%s'\n", old);
        setenv("CUDA_INJECTION64_PATH", lib, 1);
    }
    if (preload)
        prepend_env("LD_PRELOAD", lib, ':');
    snprintf(libdir, sizeof(libdir), "%s", lib);
    snprintf(py, sizeof(py), "%s/python", dirname(libdir));
    if (access(py, R_OK) == 0)
        prepend_env("PYTHONPATH", py, ':');
}

/* typrof run's settings: the profiler config file, then TYPROF_INTERVAL_MS, then the options. */
struct run_opts {
    const char *out, *node;
    unsigned interval; /* ms */
    int gpu_trace, preload;
    int cmd; /* argv index of the command */
};

/* Reads run's settings from pc (read here), the environment and argv. 0, or 2 after a message
   (a bad option, no command). */
static int run_parse(int argc, char **argv, struct run_opts *ro, struct pconf *pc)
{
    const char *iv = getenv("TYPROF_INTERVAL_MS");
    int i;

    memset(ro, 0, sizeof(*ro));
    ro->out = default_out();
    ro->gpu_trace = 1;
    pconf_read(pc);
    if (pc->interval_ms)
        ro->interval = pc->interval_ms;
    if (pc->local_path[0] && !getenv("TYPROF_OUT"))
        ro->out = pc->local_path;
    if (pc->rotate_bytes[0])
        setenv("TYPROF_ROTATE_BYTES", pc->rotate_bytes, 0);
    if (pc->rotate_secs[0])
        setenv("TYPROF_ROTATE_SECS", pc->rotate_secs, 0);
    if (iv && *iv)
        ro->interval = (unsigned)strtoul(iv, NULL, 10);
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end || v < 10 || v > 3600000) {
                fprintf(stderr, "typrof: invalid interval '%s' (10..3600000 ms)\n", argv[i]);
                return 2;
            }
            ro->interval = (unsigned)v;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            ro->out = argv[++i];
        } else if (!strcmp(argv[i], "--node") && i + 1 < argc) {
            ro->node = argv[++i];
        } else if (!strcmp(argv[i], "--no-gpu-trace")) {
            ro->gpu_trace = 0;
        } else if (!strcmp(argv[i], "--preload")) {
            ro->preload = 1;
        } else if (argv[i][0] != '-') {
            break;
        } else {
            fprintf(stderr, "typrof: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "typrof: run needs a command\n");
        usage(stderr);
        return 2;
    }
    if (ro->interval == 0)
        ro->interval = 500;
    ro->cmd = i;
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    struct run_opts ro;
    struct pconf pc;
    int rc = run_parse(argc, argv, &ro, &pc), i = ro.cmd;
    const char *out = ro.out, *node = ro.node;
    unsigned interval = ro.interval;
    int gpu_trace = ro.gpu_trace, preload = ro.preload;

    if (rc != 0)
        return rc;
    if (pc.disabled) {
        /* DisableProfiler: run the command as if typrof were not there */
        execvp(argv[i], argv + i);
        fprintf(stderr, "typrof: cannot run '%s': %s\n", argv[i], strerror(errno));
        return 127;
    }
    if (typrof__mkdirs(out) != 0) {
        fprintf(stderr, "typrof: cannot create '%s': %s\n", out, strerror(errno));
        return 2;
    }
    char abs_out[4096];
    if (!realpath(out, abs_out)) {
        fprintf(stderr, "typrof: cannot resolve '%s': %s\n", out, strerror(errno));
        return 2;
    }
    if (node)
        setenv("TYPROF_NODE_ID", node, 1);
    char lib[4096], num[32];
    int have_lib = find_lib(lib, sizeof(lib)) == 0;
    if (!have_lib)
        fprintf(stderr, "typrof: libtyprof.so not found (set TYPROF_LIB); system metrics only\n");
    setenv("TYPROF_OUT", abs_out, 1);
    snprintf(num, sizeof(num), "%llu", (unsigned long long)typrof__realtime_ns());
    setenv("TYPROF_START_NS", num, 1);
    snprintf(num, sizeof(num), "%u", interval);
    setenv("TYPROF_INTERVAL_MS", num, 1);
    if (have_lib)
        run_env_lib(lib, gpu_trace, preload);

    /* SIGCHLD is taken with sigtimedwait below; block it before the monitor thread exists so
     * that no other thread swallows it */
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &chld, &old);
    struct typrof_sysmon *mon = NULL;
    struct typrof_sysmon_opts so = {abs_out, node, interval, 0};
    if (typrof__sysmon_start(&so, &mon) != 0)
        fprintf(stderr, "typrof: system monitor could not start in '%s'\n", abs_out);

    uint64_t t0 = typrof__realtime_ns();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = forward;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        /* the monitor thread does not exist in the child; unset the recorder's own pid */
        execvp(argv[i], argv + i);
        fprintf(stderr, "typrof: cannot run '%s': %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        fprintf(stderr, "typrof: fork: %s\n", strerror(errno));
        typrof__sysmon_stop(mon);
        return 2;
    }
    g_child = pid;
    int status = 0;
    struct stat st0;
    struct timespec mtime = {0, 0};
    if (stat(pconf_path(), &st0) == 0)
        mtime = st0.st_mtim;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            break;
        struct timespec ts = {1, 0};
        if (sigtimedwait(&chld, NULL, &ts) == SIGCHLD)
            continue; /* reap above */
        struct stat st;
        if (stat(pconf_path(), &st) != 0 ||
            (st.st_mtim.tv_sec == mtime.tv_sec && st.st_mtim.tv_nsec == mtime.tv_nsec))
            continue;
        /* the agent rewrote the config (UpdateTrainingJob): apply interval and disable */
        mtime = st.st_mtim;
        struct pconf up;
        if (pconf_read(&up) != 0)
            continue;
        if (up.disabled && mon) {
            typrof__sysmon_stop(mon);
            mon = NULL;
            fprintf(stderr, "typrof: profiling disabled by '%s'\n", pconf_path());
        } else if (up.interval_ms && mon && up.interval_ms != interval) {
            interval = up.interval_ms;
            typrof__sysmon_set_interval(mon, interval);
        }
    }
    g_child = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    double wall = (double)(typrof__realtime_ns() - t0) / 1e9;
    typrof__sysmon_stop(mon);
    int code = WIFEXITED(status) ? WEXITSTATUS(status)
                                 : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);

    /* run record: command, status, wall time, interval */
    char run[8192];
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    double self_cpu = (double)self.ru_utime.tv_sec + (double)self.ru_utime.tv_usec / 1e6 +
                      (double)self.ru_stime.tv_sec + (double)self.ru_stime.tv_usec / 1e6;
    double kid_cpu = (double)kids.ru_utime.tv_sec + (double)kids.ru_utime.tv_usec / 1e6 +
                     (double)kids.ru_stime.tv_sec + (double)kids.ru_stime.tv_usec / 1e6;
    size_t off = (size_t)snprintf(
        run, sizeof(run),
        "{\"exit_code\":%d,\"wall_s\":%.3f,\"interval_ms\":%u,\"monitor_cpu_s\":%.6f,"
        "\"command_cpu_s\":%.6f,\"pid\":%d,\"start_ns\":%llu,\"end_ns\":%llu,\"command\":[",
        code, wall, interval, self_cpu, kid_cpu, (int)pid, (unsigned long long)t0,
        (unsigned long long)(t0 + (uint64_t)(wall * 1e9)));
    for (int k = i; k < argc && off < sizeof(run) - 64; k++) {
        char *tmp = NULL;
        size_t tn = 0;
        FILE *mf = open_memstream(&tmp, &tn);
        if (!mf)
            break;
        typrof__json_str(mf, argv[k]);
        fclose(mf);
        if (off + tn + 4 < sizeof(run))
            off += (size_t)snprintf(run + off, sizeof(run) - off, "%s%s", k > i ? "," : "", tmp);
        free(tmp);
    }
    snprintf(run + off, sizeof(run) - off, "]}");
    char rp[4200];
    snprintf(rp, sizeof(rp), "%s/run.json", abs_out);
    FILE *rf = fopen(rp, "w");
    if (rf) {
        fprintf(rf, "%s\n", run);
        fclose(rf);
    }
    if (typrof__report_summary(abs_out, NULL) == 0)
        fprintf(stderr, "typrof: wrote '%s' (exit %d, %.2fs)\n", abs_out, code, wall);
    return code;
}

static int cmd_rules(int argc, char **argv)
{
    const char *dir = NULL, *only = NULL;
    const char *params[64];
    size_t np = 0;
    int json = 0, list = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--rule") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--param") && i + 1 < argc && np < 64)
            params[np++] = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--list"))
            list = 1;
        else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            fprintf(stderr, "typrof: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    size_t nr;
    const struct typrof_rule_def *defs = typrof__rules(&nr);
    if (list) {
        for (size_t r = 0; r < nr; r++) {
            printf("%s: %s\n", defs[r].name, defs[r].doc);
            for (int k = 0; k < TYPROF_RULE_MAX_PARAMS && defs[r].param[k]; k++)
                printf("    %s = %g  (%s)\n", defs[r].param[k], defs[r].def[k], defs[r].pdoc[k]);
        }
        return 0;
    }
    if (!dir) {
        fprintf(stderr, "typrof: rules needs a directory\n");
        return 2;
    }
    if (np && !only) {
        fprintf(stderr, "typrof: --param needs --rule\n");
        return 2;
    }
    struct typrof_metrics m;
    if (typrof__metrics_load(dir, &m) != 0) {
        fprintf(stderr, "typrof: cannot read '%s'\n", dir);
        return 2;
    }
    int issues = 0, errors = 0, found = 0;
    if (json)
        printf("[");
    for (size_t r = 0; r < nr; r++) {
        struct typrof_rule_result res;
        if (only && strcmp(only, defs[r].name))
            continue;
        found = 1;
        typrof__rule_eval(defs[r].name, &m, params, np, &res);
        issues |= res.status == TYPROF_ISSUES;
        errors |= res.status == TYPROF_RULE_ERROR;
        if (json) {
            printf("%s\n{\"RuleConfigurationName\":\"%s\",\"RuleEvaluationStatus\":\"%s\","
                   "\"Datapoints\":%zu,\"Value\":",
                   found > 1 ? "," : "", res.rule, typrof__rule_status_name(res.status),
                   res.datapoints);
            typrof__json_num(stdout, res.value);
            printf(",\"StatusDetails\":");
            typrof__json_str(stdout, res.detail);
            printf("}");
            found = 2;
        } else {
            printf("%-22s %-14s %s\n", res.rule, typrof__rule_status_name(res.status), res.detail);
        }
    }
    if (json)
        printf("\n]\n");
    typrof__metrics_cleanup(&m);
    if (!found) {
        fprintf(stderr, "typrof: unknown rule '%s'\n", only);
        return 2;
    }
    return errors ? 2 : issues ? 1 : 0;
}

static int cmd_report(int argc, char **argv)
{
    const char *dir = NULL, *html = NULL;
    double mb = 32;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--html") && i + 1 < argc)
            html = argv[++i];
        else if (!strcmp(argv[i], "--max-trace-mb") && i + 1 < argc)
            mb = strtod(argv[++i], NULL);
        else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            fprintf(stderr, "typrof: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "typrof: report needs a directory\n");
        return 2;
    }
    char path[4200];
    if (!html) {
        snprintf(path, sizeof(path), "%s/report.html", dir);
        html = path;
    }
    int rc = typrof__report_summary(dir, stdout);
    if (rc != 0)
        return 2;
    if (typrof__report_html(dir, html, (size_t)(mb * 1048576.0), NULL) != 0)
        return 2;
    char tl[4200];
    snprintf(tl, sizeof(tl), "%s/timeline.trace.json", dir);
    if (typrof__report_timeline(dir, tl, (size_t)(mb * 1048576.0)) != 0)
        return 2;
    printf("\nwrote '%s'\nwrote '%s' (open in ui.perfetto.dev)\n", html, tl);
    return 0;
}

int main(int argc, char **argv)
{
    typrof__log_init();
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc, argv);
    if (!strcmp(argv[1], "rules"))
        return cmd_rules(argc, argv);
    if (!strcmp(argv[1], "report"))
        return cmd_report(argc, argv);
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("typrof %s\n", TY_VERSION);
        return 0;
    }
    fprintf(stderr, "typrof: '%s' is not a typrof command\n", argv[1]);
    usage(stderr);
    return 2;
}
