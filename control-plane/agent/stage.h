/*
 * stage.h - the /opt/ml tree of one host of a job, staged on the agent's disk and bind-mounted
 * into the container, and the container's environment (SM_* and friends).
 *
 * Owns: the layout <dir>/{input/config,input/data/<channel>,model,output/data,code,checkpoints},
 * the three config files (hyperparameters.json, resourceconfig.json, inputdataconfig.json), the
 * copy of channel data from the local object store, the environment list, and reading
 * output/failure. Does not own the container or the upload.
 * Thread-safe: no shared state.
 */
#ifndef TY_CP_AGENT_STAGE_H
#define TY_CP_AGENT_STAGE_H

#include <jansson.h>
#include <stddef.h>

#include "spec.h"
#include "ty_err.h"

#define STAGE_MAX_HOSTS 32 /* containers one job may ask of one agent (InstanceCount) */

/* The name of host index i (0-based) of a job: "algo-<i+1>". OUT: out (size n). */
void stage_host_name(int i, char *out, size_t n);

/* new: hyperparameters.json, string -> string. */
json_t *stage_hyperparameters_json(const struct spec *sp);
/* new: resourceconfig.json of host index host (0-based) of sp's InstanceCount hosts. */
json_t *stage_resourceconfig_json(const struct spec *sp, int host);
/* new: inputdataconfig.json ({} when no channels). */
json_t *stage_inputdataconfig_json(const struct spec *sp);

/*
 * Creates the tree of host index host under dir (removing what a previous run left there),
 * writes the config
 * files and creates each channel's directory. The agent passes s3_dir NULL and stages the data
 * itself through the object store (transfer.h: sharding, manifests, gzip, progress). With an
 * s3_dir (tools and tests without Redis), each channel whose S3Uri is s3://bucket/prefix gets a
 * plain copy of the files under <s3_dir>/bucket/ whose key starts with prefix (a directory
 * prefix is copied recursively, an exact object by its base name), and a prefix with no file
 * leaves the channel directory empty. Directories are world-writable so that any container
 * user can write. Returns 0, or a negative code with err->msg a FailureReason.
 */
int stage_prepare(const char *dir, const struct spec *sp, int host, const char *s3_dir,
                  struct ty_err *err);

/*
 * Creates (or opens) the folder rel below a host's staging folder dir (the agent's path of the
 * host's /opt/ml) and makes it 0777: a checkpoint LocalPath under /opt/ml. Each component is
 * opened or made without following a symlink (confine.h), so a link the job planted (its code
 * archive, an earlier container of the same job) is refused, never followed onto the host.
 * Returns 0, -TY_EINVAL with err->msg "ClientError: ..." naming local (the LocalPath) when a
 * component is a link or not a folder, or another negative code with an InternalServerError.
 */
int stage_ckpt_dir(const char *dir, const char *rel, const char *local, struct ty_err *err);

/*
 * Where a job's staging folders live. Their host path shows in the container's
 * /proc/self/mountinfo, so it must tell a job nothing about the data dir: they live under a
 * root of their own (--staging-dir), each job in <root>/<32 hex chars of HMAC-SHA256(key, job
 * name)>, the key a random secret kept in <data_dir>/staging.key. The name is derived, not
 * stored: an agent that restarts, or another agent of the same data dir taking the job over,
 * finds (and cleans) the same folder, and a job cannot tell which data dir or job it belongs
 * to from it.
 */
#define STAGE_KEY_LEN 32

/* The default staging root: /var/lib/trainyard/staging as root, else
   $XDG_RUNTIME_DIR/trainyard-staging, else /tmp/trainyard-staging-<uid>. OUT: out (size n). */
void stage_default_root(char *out, size_t n);

/* Creates root (mkdir -p) and makes it a 0700 folder of this uid; refuses a symlink or a folder
   of another user there. 0, or a negative code with err->msg. */
int stage_root_init(const char *root, struct ty_err *err);

/* Loads the staging key from <data_dir>/staging.key, creating it (random, 0600) the first
   time; safe when several agents start at once. OUT: key (STAGE_KEY_LEN bytes). 0 or code. */
int stage_key_load(const char *data_dir, unsigned char *key, struct ty_err *err);

/* "<root>/<hex>" of job (see above). OUT: out (size n). 0, or a negative code. */
int stage_job_dir(const char *root, const unsigned char *key, const char *job, char *out, size_t n);

struct stage_env_opts {
    int cpus;                    /* SM_NUM_CPUS */
    int gpus;                    /* SM_NUM_GPUS */
    const char *visible_devices; /* NVIDIA_VISIBLE_DEVICES: the host's ids of the GPUs the
                                    container got ("0,2"), NULL or "" = unset */
    const char *region;          /* AWS_REGION, may be NULL */
    const char *endpoint_url;    /* S3_ENDPOINT_URL, may be NULL */
    int host;                    /* this container's host index, 0-based (SM_CURRENT_HOST) */
    int relay_port;              /* > 0: trainyard's API is on 127.0.0.1:relay_port in the
                                    container (relay.h): AWS_ENDPOINT_URL and S3_ENDPOINT_URL point
                                    there instead of endpoint_url */
    const char *creds_path;      /* with relay_port: the credentials endpoint's path */
    const char *creds_token;     /* with relay_port: AWS_CONTAINER_AUTHORIZATION_TOKEN, may be NULL
                                    (no role credentials) */
};

/*
 * new: NULL-terminated "KEY=VALUE" list for the container, freed with stage_env_free(): the
 * SM_* variables, TRAINING_JOB_NAME/ARN, AWS_REGION and AWS_DEFAULT_REGION, S3_ENDPOINT_URL,
 * with a relay also AWS_ENDPOINT_URL=http://127.0.0.1:<port> and, with a token, the container
 * credentials provider's AWS_CONTAINER_CREDENTIALS_FULL_URI and
 * AWS_CONTAINER_AUTHORIZATION_TOKEN, then the job's Environment map, which overrides any of
 * them. Never keys of its own. NULL on allocation failure.
 */
char **stage_env(const struct spec *sp, const struct stage_env_opts *o);
void stage_env_free(char **env);

/*
 * Reads the first n-1 bytes (at most 1024) of <dir>/output/failure into buf, NUL-terminated,
 * trailing whitespace trimmed. output/ and failure are opened below dir without following a
 * symlink; anything but a regular file (a FIFO, a device) is ignored, never opened blocking.
 * Returns 1 when the file exists and is not empty, else 0.
 */
int stage_read_failure(const char *dir, char *buf, size_t n);

/*
 * Makes text that came out of a container valid UTF-8 in place (jansson refuses anything else):
 * each byte that does not start a well-formed sequence, NULs included, becomes '?'. len bytes of
 * s are examined; s need not be NUL-terminated.
 */
void stage_utf8_fix(char *s, size_t len);

/* rm -rf dir: dir's own path is trusted, nothing below it is followed (confine.h). 0, or
   -errno of the first failure. */
int stage_remove(const char *dir);

#endif
