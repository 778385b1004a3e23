/*
 * tuning.h - the driver of hyperparameter tuning jobs: a server thread that advances every
 * InProgress or Stopping tuning job by one pass per period, with all of its state in Redis, so
 * that a restarted server (or another replica) carries on where the last pass stopped.
 *
 * Owns: what a pass does to a tuning job (ops/tuning.c owns the API): it reads the training
 * jobs it launched, counts them (TrainingJobStatusCounters, ObjectiveStatusCounters), picks the
 * BestTrainingJob, applies early stopping (Auto: the median rule; Hyperband: successive
 * halving) on the objective's CloudWatch series, launches new training jobs up to
 * MaxParallelTrainingJobs and MaxNumberOfTrainingJobs with the strategy's suggestions
 * (tuning_strategy.h), stops them when the tuning job is stopped, and ends the tuning job.
 * The tuning job is a store_res resource of kind "tuning-job" (store_res.h): its document is
 * the DescribeHyperParameterTuningJob answer plus bookkeeping members starting with '_':
 *   _principal, _region, _account  who created it and where (its training jobs run as them)
 *   _jobs                          names of the training jobs launched, in order
 *   _stopped_early                 names of the ones early stopping stopped
 * Invariants: a training job is recorded in _jobs (compare-and-set on the record's version)
 * before it is created, and created with a deterministic name and hyperparameters, so a pass
 * that dies between the two is repaired by the next one; at most one pass at a time works on a
 * tuning job (a Redis lease, ty:lease:tuning:<name>).
 * Thread-safety: the driver has its own Redis connection; tuning_driver_pass is reentrant.
 */
#ifndef TY_CP_TUNING_H
#define TY_CP_TUNING_H

#include <jansson.h>

#include "apimodel.h"
#include "store.h"
#include "ty_err.h"

#define TUNING_KIND     "tuning-job"
#define TUNING_PERIOD_S 1.0

struct s3c_config;

struct tuning_config {
    const char *redis_url;
    const struct apimodel *model;       /* borrowed: CreateTrainingJob's validation */
    const char *s3_dir;                 /* the embedded object store, NULL when none */
    const struct s3c_config *s3_remote; /* NULL when none */
    double period_s;                    /* 0 = TUNING_PERIOD_S */
};

struct tuning_driver;

/* Starts the driver thread. c and what it points to must outlive the driver. new: stop with
   tuning_driver_stop(). NULL with err on failure. */
struct tuning_driver *tuning_driver_start(const struct tuning_config *c, struct ty_err *err);
/* Stops and joins the thread; NULL is a no-op. */
void tuning_driver_stop(struct tuning_driver *d);

/* One pass over every tuning job at time now (the driver's loop; tests). 0 or a store error. */
int tuning_driver_pass(struct store *s, const struct tuning_config *c, double now,
                       struct ty_err *err);

/* The model the driver validates with (set by tuning_driver_start), NULL before. */
const struct apimodel *tuning_model(void);

/*
 * The CreateTrainingJob input of training job name of tuning job doc (borrowed) with
 * hyperparameters hp (borrowed; merged over StaticHyperParameters). new, or NULL on allocation
 * failure.
 */
json_t *tuning_training_request(json_t *doc, const char *name, json_t *hp);

/* The objective value of a training job document (borrowed): the last FinalMetricDataList value
   of metric. 0 and OUT: *v, or -1 when it has none. */
int tuning_objective_of(json_t *job, const char *metric, double *v);

#endif
