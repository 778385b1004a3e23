/*
 * prof.h - the agent's side of the profiler (ProfilerConfig, ProfilerRuleConfigurations):
 * /opt/ml/input/config/profilerconfig.json for `typrof run` in the container, and the built-in
 * rules (profiler/rules/rules.h) evaluated on /opt/ml/output/profiler at the end of the job.
 * Stateless functions; thread-safe.
 */
#ifndef TY_CP_AGENT_PROF_H
#define TY_CP_AGENT_PROF_H

#include <jansson.h>

#define PROF_LOCAL_PATH "/opt/ml/output/profiler"

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

#endif
