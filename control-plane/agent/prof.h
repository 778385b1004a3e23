/*
 * prof.h - the agent's side of the profiler (ProfilerConfig, ProfilerRuleConfigurations):
 * /opt/ml/input/config/profilerconfig.json for `typrof run` in the container, and the built-in
 * rules and the per-job dashboard (profiler/include/typrof_report.h) made from
 * /opt/ml/output/profiler at the end of the job. Stateless functions; thread-safe.
 */
#ifndef TY_CP_AGENT_PROF_H
#define TY_CP_AGENT_PROF_H

#include <jansson.h>

#define PROF_LOCAL_PATH "/opt/ml/output/profiler"

/* Below <ProfilerConfig.S3OutputPath>/<job>/: the dashboard, where SageMaker's ProfilerReport
   rule puts its report, and the merged Perfetto trace of the whole run. */
#define PROF_REPORT_KEY  "rule-output/ProfilerReport/profiler-output/profiler-report.html"
#define PROF_TRACE_KEY   "profiler-output/timeline.trace.json"
#define PROF_REPORT_FILE "profiler-report.html"
#define PROF_TRACE_FILE  "timeline.trace.json"

/* 1 when pc (a ProfilerConfig, borrowed, may be NULL) asks for profiling. */
int prof_enabled(const json_t *pc);

/*
 * Writes <host_dir>/input/config/profilerconfig.json from pc (borrowed), atomically (rename),
 * and creates <host_dir>/output/profiler (0777). pc NULL or disabled writes DisableProfiler true.
 * Returns 0 or -1.
 */
int prof_write_config(const char *host_dir, const json_t *pc);

/* 1 when the profilerconfig.json contents a and b (ProfilerConfig, borrowed) differ. */
int prof_config_changed(const json_t *a, const json_t *b);

/* New: ProfilerRuleEvaluationStatuses with every rule of rules (borrowed array of
   ProfilerRuleConfigurations) InProgress at now; NULL when rules is empty. */
json_t *prof_rules_in_progress(const json_t *rules, double now);

/*
 * Evaluates every configuration of rules (borrowed) on <host_dir>/output/profiler, writes each
 * result to <host_dir>/output/profiler/rule-output/<RuleConfigurationName>/result.json.
 * Returns new ProfilerRuleEvaluationStatuses (IssuesFound, NoIssuesFound or Error at now), or
 * NULL when rules is empty.
 */
json_t *prof_rules_eval(const char *host_dir, const json_t *rules, double now);

/* Stores the local file path as the object uri (s3://bucket/key) with content_type. 0 or -1. */
typedef int (*prof_put_fn)(void *ud, const char *path, const char *uri, const char *content_type);

/*
 * The per-job dashboard: copies <host_dir>/output/profiler (confined), runs typrof's report on
 * the copy with the job's rules (borrowed ProfilerRuleConfigurations, may be NULL) evaluated
 * for it, and stores through put the HTML at <uri_base>/PROF_REPORT_KEY and the merged trace
 * at <uri_base>/PROF_TRACE_KEY (uri_base: s3://.../<job>). Best effort: failures are logged.
 */
void prof_report_publish(const char *host_dir, const json_t *rules, const char *uri_base,
                         prof_put_fn put, void *ud);

#endif
