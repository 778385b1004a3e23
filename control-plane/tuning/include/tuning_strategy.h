/*
 * tuning_strategy.h - the search strategies of hyperparameter tuning jobs (Random, Grid,
 * Bayesian, Hyperband) over a parameter space, and the early-stopping rules.
 *
 * Owns: parsing ParameterRanges into a space, the scaling of each range onto the unit interval
 * (Linear, Logarithmic, ReverseLogarithmic, Auto), turning a point of the unit cube into the
 * string hyperparameters SageMaker passes, the Gaussian-process surrogate with expected
 * improvement (docs/tuning.md), and the median stopping rule.
 * Does not own: Redis, training jobs, the tuning job document (tuning.c).
 * Invariants: every function is pure given its inputs and its seed (the same seed and history
 * give the same suggestion), so a driver that restarts suggests the same next point.
 * Thread-safety: reentrant.
 */
#ifndef TY_CP_TUNING_STRATEGY_H
#define TY_CP_TUNING_STRATEGY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ty_err.h"

#define TUNING_MAX_PARAMS 30  /* SageMaker: at most 30 ranges in all */
#define TUNING_MAX_VALUES 30  /* values of one categorical range */
#define TUNING_MAX_OBS    200 /* observations the surrogate fits (the most recent ones) */

enum tuning_kind { TUNING_INTEGER, TUNING_CONTINUOUS, TUNING_CATEGORICAL };
enum tuning_scale { TUNING_LINEAR, TUNING_LOG, TUNING_REVLOG };
enum tuning_strategy_kind { TUNING_RANDOM, TUNING_GRID, TUNING_BAYESIAN, TUNING_HYPERBAND };

struct tuning_param {
    char name[257];
    enum tuning_kind kind;
    enum tuning_scale scale;         /* Auto is resolved at parse time */
    double lo, hi;                   /* integer and continuous */
    int nvalues;                     /* categorical */
    char *values[TUNING_MAX_VALUES]; /* owned by the space */
};

struct tuning_space {
    struct tuning_param p[TUNING_MAX_PARAMS];
    int n;
};

/* One finished (or running) training job as the strategies see it: its point in the unit cube
   and its objective, lower is better (the caller negates Maximize objectives). */
struct tuning_obs {
    double u[TUNING_MAX_PARAMS];
    double y;
    int has_y;
};

/*
 * Parses ParameterRanges (borrowed; {IntegerParameterRanges, ContinuousParameterRanges,
 * CategoricalParameterRanges}) into sp (clean it with tuning_space_cleanup, also on failure).
 * Errors (-TY_EINVAL naming the field): MinValue/MaxValue not numbers or Min > Max, a
 * Logarithmic range with Min <= 0, ReverseLogarithmic outside [0, 1), more than
 * TUNING_MAX_PARAMS ranges, a name used twice, no range at all.
 */
int tuning_space_parse(json_t *ranges, struct tuning_space *sp, struct ty_err *err);
void tuning_space_cleanup(struct tuning_space *sp);

/* The value of parameter i at unit coordinate u (clamped to [0,1]): integer and continuous
   scaled, integers rounded, categorical the floor(u * n)-th value. */
double tuning_param_value(const struct tuning_param *p, double u);
/* The unit coordinate of value x (inverse of tuning_param_value); categorical: index of the
   value string s (x ignored) at the centre of its cell; -1 when s is not a value. */
double tuning_param_unit(const struct tuning_param *p, double x, const char *s);

/* new: {"name": "value"} strings for the point u (SageMaker's text forms: integers "%lld",
   continuous "%.10g", categorical the value). */
json_t *tuning_point_params(const struct tuning_space *sp, const double *u);
/* Point of a training job's HyperParameters (borrowed) in sp's cube; parameters missing or
   out of range are clamped. 0, or -1 when a categorical value is unknown. OUT: u. */
int tuning_point_of(const struct tuning_space *sp, json_t *hp, double *u);

/* Number of grid points (product of the categorical sizes and integer widths); 0 when a
   continuous range makes the grid infinite; capped at 1e9. */
long long tuning_grid_size(const struct tuning_space *sp);
/* The index-th grid point (mixed radix, first parameter fastest). OUT: u. */
void tuning_grid_point(const struct tuning_space *sp, long long index, double *u);

/* A deterministic 64-bit generator (splitmix64 seeding, xorshift64*). */
uint64_t tuning_rand_seed(const char *name, long long index);
double tuning_rand_unit(uint64_t *state);

/*
 * The next point for strategy k. seed: tuning_rand_seed(name, index). obs/nobs: the history
 * (borrowed; only the last TUNING_MAX_OBS with has_y are fitted). Random and Hyperband draw
 * uniformly; Bayesian draws uniformly until it has TUNING_BAYES_INIT observations, then
 * maximises expected improvement under a Gaussian process (Matern 5/2) over random and
 * local candidates. Grid: use tuning_grid_point. OUT: u.
 */
#define TUNING_BAYES_INIT 3
void tuning_suggest(enum tuning_strategy_kind k, const struct tuning_space *sp, uint64_t seed,
                    const struct tuning_obs *obs, size_t nobs, double *u);

/*
 * The median stopping rule: a running job whose best value (lower is better) after its first t
 * points is worse than the median of the other jobs' running means over their first t points
 * (only jobs with at least t points count, and at least 3 of them) is stopped. series[i] are
 * the objective series of the other jobs (values in order), lens[i] their lengths. Returns 1
 * to stop, 0 to go on.
 */
int tuning_median_stop(const double *mine, size_t t, const double *const *series,
                       const size_t *lens, size_t n);

/*
 * Hyperband's successive halving (eta = 3): at each rung t = 1, 3, 9, 27, ... points, a
 * running job whose best value (lower is better) over its first t points is not among the best
 * 1/eta of every job's best over their first t points (jobs with at least t points, at least
 * eta of them, mine included) is stopped. Between rungs it never stops. Arguments as
 * tuning_median_stop. Returns 1 to stop.
 */
#define TUNING_HYPERBAND_ETA 3
int tuning_hyperband_stop(const double *mine, size_t t, const double *const *series,
                          const size_t *lens, size_t n);

#endif
