/*
 * train.c - trainyard-train, the SageMaker training container contract of trainyard/runtime.
 *
 * Owns: what `docker run <image> train` does (as the SageMaker training toolkit's `train`
 * console script): reads
 * /opt/ml/input/config/{hyperparameters,resourceconfig,inputdataconfig}.json, exports the SM_*
 * variables, runs the user's program named by the hyperparameter sagemaker_program (or
 * $SAGEMAKER_PROGRAM) from /opt/ml/code with the other hyperparameters as
 * `--key value` arguments, or else the built-in trainer /usr/bin/trainyard-builtin, and writes
 * /opt/ml/output/success or /opt/ml/output/failure. Does not own: staging of /opt/ml (the agent
 * does it), downloading sagemaker_submit_directory from S3 (the agent stages code).
 * Invariants: runs as PID 1 in the container, so it forwards SIGTERM/SIGINT to the program and
 * reaps every child; the failure file is never overwritten once the program wrote one.
 * The root /opt/ml can be moved with $TRAINYARD_ML_ROOT (tests).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TY_VERSION
#define TY_VERSION "dev"
#endif

#define TRAIN_MAX_ARGS 1024
#define TRAIN_MAX_PATH 4096
#define TRAIN_BUILTIN  "/usr/bin/trainyard-builtin"
/* JSON as Python's json.dumps would write it for the toolkit: 0.1 stays 0.1 (not %.17g). */
#define TRAIN_JSON_FLAGS (JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(16))

struct train {
    char root[1024];          /* /opt/ml */
    json_t *hps_raw;          /* hyperparameters.json as read (string values) */
    json_t *hps;              /* user hyperparameters, JSON-decoded */
    json_t *framework;        /* sagemaker_* hyperparameters, JSON-decoded */
    json_t *resource;         /* resourceconfig.json */
    json_t *input;            /* inputdataconfig.json */
    json_t *user_args;        /* array of strings */
    const char *program;      /* borrowed from framework or the environment */
    const char *current_host; /* borrowed from resource */
};

static volatile sig_atomic_t child_pid;

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
    va_list ap;
    fputs("trainyard-train: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

/* a/b into out; an over-long path is cut (and then names nothing that exists). */
static void path_join(char *out, size_t n, const char *a, const char *b)
{
    int w = snprintf(out, n, "%s/%s", a, b);
    if (w < 0 || (size_t)w >= n)
        out[n - 1] = '\0';
}

static void mkdir_p(const char *path)
{
    char tmp[TRAIN_MAX_PATH];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            (void)mkdir(tmp, 0755);
            *p = '/';
        }
    }
    (void)mkdir(tmp, 0755);
}

/* Writes text to <root>/output/<name> unless keep_existing and it already exists. */
static void write_output_file(const struct train *t, const char *name, const char *text,
                              int keep_existing)
{
    char dir[TRAIN_MAX_PATH], path[TRAIN_MAX_PATH];
    int fd, flags = O_WRONLY | O_CREAT | O_TRUNC;

    path_join(dir, sizeof(dir), t->root, "output");
    mkdir_p(dir);
    path_join(path, sizeof(path), dir, name);
    if (keep_existing)
        flags |= O_EXCL;
    fd = open(path, flags, 0644);
    if (fd < 0)
        return;
    if (text && write(fd, text, strlen(text)) < 0)
        logmsg("cannot write '%s': %s", path, strerror(errno));
    close(fd);
}

static int fail(const struct train *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const struct train *t, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    logmsg("%s", msg);
    write_output_file(t, "failure", msg, 1);
    return 1;
}

/* Loads <root>/input/config/<name>; a missing file gives an empty object. NULL on bad JSON. */
static json_t *load_config(const struct train *t, const char *name, char *why, size_t wn)
{
    char path[TRAIN_MAX_PATH];
    json_error_t je;
    json_t *j;

    snprintf(path, sizeof(path), "%s/input/config/%s", t->root, name);
    if (access(path, F_OK) != 0)
        return json_object();
    j = json_load_file(path, 0, &je);
    if (!j || !json_is_object(j)) {
        snprintf(why, wn, "cannot read '%.512s': %s", path, j ? "not a JSON object" : je.text);
        json_decref(j);
        return NULL;
    }
    return j;
}

static int sorted_keys(json_t *o, const char ***out)
{
    size_t n = json_object_size(o), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    const char *k;
    json_t *v;
    if (!keys)
        return -1;
    json_object_foreach(o, k, v)
    {
        if (i < n)
            keys[i++] = k;
    }
    n = i;
    for (i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *tmp = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = tmp;
        }
    }
    *out = keys;
    return (int)n;
}

/* The toolkit json.loads each hyperparameter value and falls back to the raw string. new. */
static json_t *decode_value(json_t *v)
{
    const char *s = json_string_value(v);
    json_t *d;
    if (!s)
        return json_deep_copy(v);
    d = json_loads(s, JSON_DECODE_ANY, NULL);
    return d ? d : json_string(s);
}

/* A decoded value as the toolkit's str(): strings raw, numbers as written, True/False/None. */
static char *value_text(json_t *raw, json_t *v)
{
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_true(v))
        return strdup("True");
    if (json_is_false(v))
        return strdup("False");
    if (json_is_null(v))
        return strdup("None");
    if (json_is_object(v)) {
        /* to_cmd_args: "k=v,k2=v2", keys sorted */
        size_t cap = 4096, len = 0;
        char *out = calloc(1, cap);
        const char **keys = NULL;
        int n, i;
        if (!out)
            return NULL;
        n = sorted_keys(v, &keys);
        if (n < 0) {
            free(out);
            return NULL;
        }
        for (i = 0; i < n; i++) {
            json_t *e = json_object_get(v, keys[i]);
            char *es =
                json_is_string(e) ? strdup(json_string_value(e)) : json_dumps(e, TRAIN_JSON_FLAGS);
            int w = snprintf(out + len, cap - len, "%s%s=%s", i ? "," : "", keys[i], es ? es : "");
            free(es);
            if (w < 0 || (size_t)w >= cap - len)
                break;
            len += (size_t)w;
        }
        free(keys);
        return out;
    }
    /* numbers and arrays: the text as the user wrote it */
    if (json_is_string(raw))
        return strdup(json_string_value(raw));
    return json_dumps(v, TRAIN_JSON_FLAGS);
}

static int setenv_json(const char *name, json_t *v)
{
    char *s = json_dumps(v, TRAIN_JSON_FLAGS);
    int rc;
    if (!s)
        return -1;
    rc = setenv(name, s, 1);
    free(s);
    return rc;
}

/* SM_<upper(prefix+key)>; non-alphanumerics other than '_' and '-' stay as they are. */
static void env_name(char *out, size_t n, const char *prefix, const char *key)
{
    size_t i = 0;
    int w = snprintf(out, n, "SM_%s", prefix);
    if (w < 0 || (size_t)w >= n)
        return;
    i = (size_t)w;
    for (; *key && i + 1 < n; key++)
        out[i++] = (*key >= 'a' && *key <= 'z') ? (char)(*key - 'a' + 'A') : *key;
    out[i] = '\0';
}

static int count_gpus(void)
{
    char path[64];
    int n = 0;
    for (int i = 0; i < 64; i++) {
        snprintf(path, sizeof(path), "/dev/nvidia%d", i);
        if (access(path, F_OK) == 0)
            n++;
    }
    return n;
}

static int load_all(struct train *t, char *why, size_t wn)
{
    const char **keys = NULL;
    const char *k;
    json_t *v;
    int n;

    t->hps_raw = load_config(t, "hyperparameters.json", why, wn);
    if (!t->hps_raw)
        return -1;
    t->resource = load_config(t, "resourceconfig.json", why, wn);
    if (!t->resource)
        return -1;
    t->input = load_config(t, "inputdataconfig.json", why, wn);
    if (!t->input)
        return -1;
    t->hps = json_object();
    t->framework = json_object();
    t->user_args = json_array();
    if (!t->hps || !t->framework || !t->user_args)
        return -1;
    json_object_foreach(t->hps_raw, k, v)
    {
        json_t *d = decode_value(v);
        if (!d)
            return -1;
        json_object_set_new(strncmp(k, "sagemaker_", 10) ? t->hps : t->framework, k, d);
    }
    t->program = json_string_value(json_object_get(t->framework, "sagemaker_program"));
    if (!t->program || !*t->program)
        t->program = getenv("SAGEMAKER_PROGRAM");
    if (t->program && !*t->program)
        t->program = NULL;
    if (!json_is_string(json_object_get(t->resource, "current_host")))
        json_object_set_new(t->resource, "current_host", json_string("algo-1"));
    if (!json_is_array(json_object_get(t->resource, "hosts")))
        json_object_set_new(t->resource, "hosts", json_pack("[s]", "algo-1"));
    t->current_host = json_string_value(json_object_get(t->resource, "current_host"));

    n = sorted_keys(t->hps, &keys);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        json_t *d = json_object_get(t->hps, keys[i]);
        char *val = value_text(json_object_get(t->hps_raw, keys[i]), d);
        char name[512];
        snprintf(name, sizeof(name), "%s%s", strlen(keys[i]) > 1 ? "--" : "-", keys[i]);
        json_array_append_new(t->user_args, json_string(name));
        json_array_append_new(t->user_args, json_string(val ? val : ""));
        free(val);
    }
    free(keys);
    return 0;
}

/* Exports the SM_* variables (sagemaker_training environment.py / mapping.py). */
/* SM_CHANNEL_<NAME> for each input channel (also appended to channels and channel_dirs) and
   SM_HP_<NAME> for each hyperparameter (strings as they are, the rest as JSON). 0 or -1. */
static int export_inputs(struct train *t, json_t *channels, json_t *channel_dirs)
{
    char dir[TRAIN_MAX_PATH], name[512];
    const char **keys = NULL;
    const char *k;
    json_t *v;
    int n;

    n = sorted_keys(t->input, &keys);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        snprintf(dir, sizeof(dir), "%s/input/data/%s", t->root, keys[i]);
        json_array_append_new(channels, json_string(keys[i]));
        json_object_set_new(channel_dirs, keys[i], json_string(dir));
        env_name(name, sizeof(name), "CHANNEL_", keys[i]);
        setenv(name, dir, 1);
    }
    free(keys);
    json_object_foreach(t->hps, k, v)
    {
        char *text;
        env_name(name, sizeof(name), "HP_", k);
        if (json_is_string(v)) {
            setenv(name, json_string_value(v), 1);
            continue;
        }
        text = json_is_string(json_object_get(t->hps_raw, k))
                   ? strdup(json_string_value(json_object_get(t->hps_raw, k)))
                   : json_dumps(v, TRAIN_JSON_FLAGS);
        if (text)
            setenv(name, text, 1);
        free(text);
    }
    return 0;
}

static int export_env(struct train *t)
{
    char dir[TRAIN_MAX_PATH], num[32], module[512] = "";
    json_t *channels = json_array(), *channel_dirs = json_object(), *train_env = json_object();
    json_t *groups, *group_names = json_array(), *groups_dict = json_object();
    const char *itype, *gname, *ifname, *k;
    json_t *v, *hosts = json_object_get(t->resource, "hosts"), *group_hosts = hosts;
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), ngpu = count_gpus();

    if (!channels || !channel_dirs || !train_env || !group_names || !groups_dict)
        return -1;
    itype = json_string_value(json_object_get(t->resource, "current_instance_type"));
    itype = itype ? itype : "local";
    gname = json_string_value(json_object_get(t->resource, "current_group_name"));
    gname = gname ? gname : "homogeneousCluster";
    ifname = json_string_value(json_object_get(t->resource, "network_interface_name"));
    ifname = ifname ? ifname : "eth0";
    groups = json_object_get(t->resource, "instance_groups");
    if (json_is_array(groups) && json_array_size(groups)) {
        size_t i;
        json_array_foreach(groups, i, v)
        {
            const char *g = json_string_value(json_object_get(v, "instance_group_name"));
            if (!g)
                continue;
            json_array_append_new(group_names, json_string(g));
            json_object_set(groups_dict, g, v);
            if (!strcmp(g, gname) && json_is_array(json_object_get(v, "hosts")))
                group_hosts = json_object_get(v, "hosts");
        }
    } else {
        json_array_append_new(group_names, json_string(gname));
        json_object_set_new(groups_dict, gname,
                            json_pack("{s:s, s:s, s:O}", "instance_group_name", gname,
                                      "instance_type", itype, "hosts", hosts));
    }

    if (export_inputs(t, channels, channel_dirs) != 0)
        return -1;

#define SET_DIR(envname, key, sub)                                                                 \
    do {                                                                                           \
        snprintf(dir, sizeof(dir), "%s%s", t->root, sub);                                          \
        setenv(envname, dir, 1);                                                                   \
        json_object_set_new(train_env, key, json_string(dir));                                     \
    } while (0)
    SET_DIR("SM_MODEL_DIR", "model_dir", "/model");
    SET_DIR("SM_INPUT_DIR", "input_dir", "/input");
    SET_DIR("SM_INPUT_CONFIG_DIR", "input_config_dir", "/input/config");
    SET_DIR("SM_OUTPUT_DIR", "output_dir", "/output");
    SET_DIR("SM_OUTPUT_DATA_DIR", "output_data_dir", "/output/data");
    SET_DIR("SM_OUTPUT_INTERMEDIATE_DIR", "output_intermediate_dir", "/output/intermediate");
    SET_DIR("SM_MODULE_DIR", "module_dir", "/code");
#undef SET_DIR

    setenv_json("SM_HOSTS", hosts);
    setenv("SM_CURRENT_HOST", t->current_host, 1);
    setenv("SM_CURRENT_INSTANCE_TYPE", itype, 1);
    setenv("SM_CURRENT_INSTANCE_GROUP", gname, 1);
    setenv_json("SM_CURRENT_INSTANCE_GROUP_HOSTS", group_hosts);
    setenv_json("SM_INSTANCE_GROUPS", group_names);
    setenv_json("SM_INSTANCE_GROUPS_DICT", groups_dict);
    setenv("SM_DISTRIBUTION_INSTANCE_GROUPS", "[]", 1);
    setenv("SM_IS_HETERO", json_array_size(group_names) > 1 ? "true" : "false", 1);
    setenv("SM_NETWORK_INTERFACE_NAME", ifname, 1);
    setenv_json("SM_HPS", t->hps);
    setenv_json("SM_FRAMEWORK_PARAMS", t->framework);
    setenv_json("SM_RESOURCE_CONFIG", t->resource);
    setenv_json("SM_INPUT_DATA_CONFIG", t->input);
    setenv_json("SM_CHANNELS", channels);
    setenv_json("SM_USER_ARGS", t->user_args);
    if (json_object_get(t->resource, "topology"))
        setenv_json("SM_TOPOLOGY", json_object_get(t->resource, "topology"));
    snprintf(num, sizeof(num), "%d", ncpu > 0 ? ncpu : 1);
    setenv("SM_NUM_CPUS", num, 1);
    snprintf(num, sizeof(num), "%d", ngpu);
    setenv("SM_NUM_GPUS", num, 1);
    setenv("SM_NUM_NEURONS", "0", 1);
    setenv("SM_LOG_LEVEL", "20", 1);
    setenv("SM_USER_ENTRY_POINT", t->program ? t->program : "", 1);
    if (t->program) {
        const char *dot = strrchr(t->program, '.');
        snprintf(module, sizeof(module), "%.*s",
                 (int)(dot ? (size_t)(dot - t->program) : strlen(t->program)), t->program);
    }
    setenv("SM_MODULE_NAME", module, 1);
    k = json_string_value(json_object_get(t->framework, "sagemaker_training_module"));
    if (!k)
        k = getenv("SAGEMAKER_TRAINING_MODULE");
    setenv("SM_FRAMEWORK_MODULE", k ? k : "", 1);

    json_object_set(train_env, "hosts", hosts);
    json_object_set_new(train_env, "current_host", json_string(t->current_host));
    json_object_set_new(train_env, "current_instance_type", json_string(itype));
    json_object_set_new(train_env, "current_instance_group", json_string(gname));
    json_object_set(train_env, "current_instance_group_hosts", group_hosts);
    json_object_set(train_env, "instance_groups", group_names);
    json_object_set(train_env, "instance_groups_dict", groups_dict);
    json_object_set_new(train_env, "distribution_instance_groups", json_array());
    json_object_set_new(train_env, "is_hetero", json_boolean(json_array_size(group_names) > 1));
    json_object_set_new(train_env, "network_interface_name", json_string(ifname));
    json_object_set(train_env, "hyperparameters", t->hps);
    json_object_set(train_env, "additional_framework_parameters", t->framework);
    json_object_set(train_env, "resource_config", t->resource);
    json_object_set(train_env, "input_data_config", t->input);
    json_object_set(train_env, "channel_input_dirs", channel_dirs);
    json_object_set_new(train_env, "num_cpus", json_integer(ncpu > 0 ? ncpu : 1));
    json_object_set_new(train_env, "num_gpus", json_integer(ngpu));
    json_object_set_new(train_env, "num_neurons", json_integer(0));
    json_object_set_new(train_env, "log_level", json_integer(20));
    json_object_set_new(train_env, "user_entry_point",
                        t->program ? json_string(t->program) : json_null());
    json_object_set_new(train_env, "module_name", json_string(module));
    json_object_set_new(train_env, "framework_module", k ? json_string(k) : json_null());
    json_object_set_new(train_env, "job_name",
                        getenv("TRAINING_JOB_NAME") ? json_string(getenv("TRAINING_JOB_NAME"))
                                                    : json_null());
    json_object_set(train_env, "user_args", t->user_args);
    setenv_json("SM_TRAINING_ENV", train_env);

    json_decref(channels);
    json_decref(channel_dirs);
    json_decref(train_env);
    json_decref(group_names);
    json_decref(groups_dict);
    return 0;
}

static void forward_signal(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

/* Fills argv for the program: interpreter (from .sh or the shebang), path, user args. */
static int build_argv(struct train *t, const char *path, char **argv, char *shebang, size_t sn)
{
    int argc = 0;
    const char *dot = strrchr(path, '.');
    FILE *f;

    if (dot && !strcmp(dot, ".sh")) {
        argv[argc++] = "/bin/sh";
    } else if ((f = fopen(path, "r")) != NULL) {
        if (fgets(shebang, (int)sn, f) && shebang[0] == '#' && shebang[1] == '!') {
            char *p = shebang + 2, *arg;
            shebang[strcspn(shebang, "\r\n")] = '\0';
            while (*p == ' ' || *p == '\t')
                p++;
            arg = p + strcspn(p, " \t");
            if (*arg) {
                *arg++ = '\0';
                while (*arg == ' ' || *arg == '\t')
                    arg++;
            }
            if (*p)
                argv[argc++] = p;
            if (*p && *arg)
                argv[argc++] = arg;
        } else if (dot && !strcmp(dot, ".py")) {
            argv[argc++] = "python3";
        }
        fclose(f);
    }
    argv[argc++] = (char *)path;
    for (size_t i = 0; i < json_array_size(t->user_args) && argc < TRAIN_MAX_ARGS - 1; i++)
        argv[argc++] = (char *)json_string_value(json_array_get(t->user_args, i));
    argv[argc] = NULL;
    return argc;
}

static int run_program(struct train *t)
{
    char code_dir[TRAIN_MAX_PATH], path[TRAIN_MAX_PATH], shebang[512], msg[256];
    char *argv[TRAIN_MAX_ARGS];
    struct sigaction sa;
    int status = 0, code;
    pid_t pid, w;

    path_join(code_dir, sizeof(code_dir), t->root, "code");
    if (strstr(t->program, "..") || t->program[0] == '/')
        return fail(t, "sagemaker_program '%s' must name a file in %s", t->program, code_dir);
    path_join(path, sizeof(path), code_dir, t->program);
    if (access(path, R_OK) != 0)
        return fail(t, "sagemaker_program '%s' not found in %s", t->program, code_dir);
    build_argv(t, path, argv, shebang, sizeof(shebang));
    logmsg("running %s (%zu hyperparameters)", path, json_object_size(t->hps));

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return fail(t, "cannot start '%s': %s", path, strerror(errno));
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        if (chdir(code_dir) != 0)
            _exit(126);
        execvp(argv[0], argv);
        fprintf(stderr, "trainyard-train: cannot execute '%s': %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    /* PID 1 reaps every orphan until the program itself exits. */
    for (;;) {
        int st;
        w = waitpid(-1, &st, 0);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return fail(t, "waitpid: %s", strerror(errno));
        }
        if (w == pid) {
            status = st;
            break;
        }
    }
    child_pid = 0;
    if (WIFEXITED(status))
        code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        code = 128 + WTERMSIG(status);
    else
        code = 1;
    if (code == 0) {
        write_output_file(t, "success", "", 0);
        logmsg("%s completed", t->program);
        return 0;
    }
    snprintf(msg, sizeof(msg), "AlgorithmError: ExecuteUserScriptError: ExitCode %d: '%s' failed",
             code, t->program);
    write_output_file(t, "failure", msg, 1);
    logmsg("%s", msg);
    return code;
}

static void train_free(struct train *t)
{
    json_decref(t->hps_raw);
    json_decref(t->hps);
    json_decref(t->framework);
    json_decref(t->resource);
    json_decref(t->input);
    json_decref(t->user_args);
}

static int train_main(void)
{
    struct train t;
    char why[1024] = "", dir[TRAIN_MAX_PATH];
    const char *root = getenv("TRAINYARD_ML_ROOT");
    int rc;

    memset(&t, 0, sizeof(t));
    snprintf(t.root, sizeof(t.root), "%s", root && *root ? root : "/opt/ml");
    if (load_all(&t, why, sizeof(why))) {
        rc = fail(&t, "%s", why[0] ? why : "out of memory reading the configuration");
        goto out;
    }
    snprintf(dir, sizeof(dir), "%s/model", t.root);
    mkdir_p(dir);
    snprintf(dir, sizeof(dir), "%s/output/data", t.root);
    mkdir_p(dir);
    snprintf(dir, sizeof(dir), "%s/output/intermediate", t.root);
    mkdir_p(dir);
    if (export_env(&t)) {
        rc = fail(&t, "out of memory exporting the environment");
        goto out;
    }
    if (t.program) {
        rc = run_program(&t);
        goto out;
    }
    if (access(TRAIN_BUILTIN, X_OK) == 0) {
        char *argv[] = {TRAIN_BUILTIN, "train", NULL};
        logmsg("no sagemaker_program: running the built-in trainer");
        fflush(NULL);
        execv(TRAIN_BUILTIN, argv);
        rc = fail(&t, "cannot execute %s: %s", TRAIN_BUILTIN, strerror(errno));
        goto out;
    }
    rc = fail(&t, "no training program: set sagemaker_program or use ContainerEntrypoint");
out:
    train_free(&t);
    return rc;
}

int main(int argc, char **argv)
{
    const char *self = strrchr(argv[0], '/');
    self = self ? self + 1 : argv[0];
    if ((argc >= 2 && !strcmp(argv[1], "train")) || (!strcmp(self, "train") && argc == 1))
        return train_main();
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        printf("trainyard-train %s\n", TY_VERSION);
        return 0;
    }
    fprintf(stderr,
            "usage: trainyard-train train\n"
            "runs the SageMaker training contract: /opt/ml/input/config/*.json, SM_* variables,\n"
            "hyperparameter sagemaker_program in /opt/ml/code, or the built-in trainer\n");
    return 2;
}
