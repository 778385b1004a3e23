#ifndef TY_PROFILER_RULES_H
#define TY_PROFILER_RULES_H
/*
 * rules.h - the built-in profiler rules, named and defaulted as SageMaker Debugger's profiler
 * rules (LowGPUUtilization, CPUBottleneck, IOBottleneck, GPUMemoryIncrease, BatchSize,
 * MaxInitializationTime, StepOutlier, LoadBalancing), evaluated on a profiler output directory.
 * Used by `typrof rules` and meant for the agent (ProfilerRuleConfigurations) too.
 * Not thread-safe per struct typrof_metrics; results are plain data.
 */
#include <stddef.h>

struct typrof_series { /* one (Name, Dimension) of the system metrics, sorted by time */
    char name[64];
    char dim[48];
    double *t, *v;
    size_t n, cap;
};

struct typrof_metrics {
    struct typrof_series *s;
    size_t n, cap;
    double *step_ms; /* step durations from the summaries */
    size_t nsteps, capsteps;
    double first_step_s; /* seconds from process start to the first step; < 0: none */
    double run_s;        /* longest process duration in the summaries */
    size_t files, bad_lines;
};

/* Loads <dir>/system/incremental/<hour>/<epoch>.<node>.json (all nodes) and
 * <dir>/summary/<node>.<pid>.summary.json. OUT: *m (cleanup with typrof__metrics_cleanup()).
 * Returns 0, or -1 if dir cannot be read. Corrupt lines are skipped and counted. */
int typrof__metrics_load(const char *dir, struct typrof_metrics *m);
void typrof__metrics_cleanup(struct typrof_metrics *m);
/* Adds one point (tests and the loader). Returns 0 or -1 on ENOMEM. */
int typrof__metrics_add(struct typrof_metrics *m, const char *name, const char *dim, double t,
                        double v);
/* Borrowed: the series, or NULL. */
const struct typrof_series *typrof__metrics_find(const struct typrof_metrics *m, const char *name,
                                                 const char *dim);
/* Sorts every series by time; call after adding points. */
void typrof__metrics_sort(struct typrof_metrics *m);

/* TYPROF_NO_DATA: the rule was not evaluated (no series it needs, or none past `patience`);
 * it is neither a pass nor a finding. */
enum typrof_rule_status {
    TYPROF_NO_ISSUES = 0,
    TYPROF_ISSUES = 1,
    TYPROF_RULE_ERROR = 2,
    TYPROF_NO_DATA = 3
};

#define TYPROF_RULE_MAX_PARAMS 6
struct typrof_rule_def {
    const char *name;
    const char *doc;
    const char *param[TYPROF_RULE_MAX_PARAMS]; /* NULL-terminated */
    double def[TYPROF_RULE_MAX_PARAMS];
    const char *pdoc[TYPROF_RULE_MAX_PARAMS];
};

struct typrof_rule_result {
    const char *rule; /* static */
    enum typrof_rule_status status;
    size_t datapoints;
    double value; /* the measured quantity compared with the threshold */
    char detail[400];
};

/* The rule table (static). OUT: *n. */
const struct typrof_rule_def *typrof__rules(size_t *n);
const char *typrof__rule_status_name(enum typrof_rule_status s);

/* Evaluates rule `name` with its defaults overridden by params ("key=value" strings, n_params
 * of them; unknown keys make the result TYPROF_RULE_ERROR). OUT: *r. Returns 0, or -1 when the
 * rule does not exist. */
int typrof__rule_eval(const char *name, const struct typrof_metrics *m, const char *const *params,
                      size_t n_params, struct typrof_rule_result *r);

#endif /* TY_PROFILER_RULES_H */
