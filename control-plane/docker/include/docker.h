/*
 * docker.h - a client for the Docker Engine API (Docker or Podman's compatible service).
 *
 * Owns: one libcurl easy handle talking HTTP/1.1 to the engine over a unix socket
 * (CURLOPT_UNIX_SOCKET_PATH) or tcp://, the JSON of the API calls trainyard needs, and the
 * demultiplexing of log streams (8-byte frame headers) into lines. Does not own job semantics.
 * Thread-safety: one struct docker per thread.
 * API version: requests go to /v1.41/... which both Docker and Podman 4 serve.
 */
#ifndef TY_CP_AGENT_DOCKER_H
#define TY_CP_AGENT_DOCKER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ty_err.h"

struct docker;

/*
 * host: "unix:///var/run/docker.sock", "unix:///run/trainyard-podman.sock" or
 * "tcp://127.0.0.1:2375". Does not connect yet. new: caller frees with docker_close().
 */
struct docker *docker_open(const char *host, struct ty_err *err);
void docker_close(struct docker *d);

/* GET /_ping. 0, or -TY_EENGINE with a one-line reason (socket missing, refused, ...). */
int docker_ping(struct docker *d, struct ty_err *err);

/* 1 when the image name[:tag] exists locally, 0 when not, negative on error. */
int docker_image_exists(struct docker *d, const char *image, struct ty_err *err);

/*
 * Imports a root-filesystem tarball (plain or gzip) as image repo_tag ("trainyard/runtime:0.1.0")
 * with POST /images/create?fromSrc=-, streaming the file. Podman 4.3 ignores tag= and names
 * the import docker.io/<repo>:latest, so the import is followed by a tag to repo_tag when
 * needed; afterwards docker_image_exists(d, repo_tag) is 1. changes are Dockerfile-style
 * instructions applied at import ("ENTRYPOINT [...]", "ENV K=V", "WORKDIR /"), may be NULL.
 */
int docker_image_import(struct docker *d, const char *tar_path, const char *repo_tag,
                        const char *const *changes, struct ty_err *err);

struct docker_create {
    const char *image;              /* required */
    const char *name;               /* container name, may be NULL */
    const char *hostname;           /* may be NULL */
    const char *const *entrypoint;  /* NULL-terminated, NULL = image default */
    const char *const *cmd;         /* NULL-terminated, NULL = image default */
    const char *const *env;         /* NULL-terminated "KEY=VALUE", may be NULL */
    const char *const *binds;       /* NULL-terminated "/host:/container[:ro]", may be NULL */
    json_t *labels;                 /* borrowed object of string values, may be NULL */
    int64_t memory_bytes;           /* 0 = no limit */
    int64_t nano_cpus;              /* 0 = no limit */
    int network_none;               /* NetworkMode "none" */
    const char *network;            /* NetworkMode name when not none, may be NULL */
    const char *net_container;      /* NetworkMode "container:<id>": joins that container's
                                       network namespace (network_none, network and aliases are
                                       then ignored), may be NULL */
    const char *const *aliases;     /* NULL-terminated DNS names on network, may be NULL */
    const char *network_mode;       /* a NetworkMode as it is ("host", Podman's "ns:<path>"),
                                       with no endpoint; used when none of the above is set */
    const char *const *extra_hosts; /* NULL-terminated "name:address" lines for /etc/hosts
                                       (ExtraHosts), may be NULL */
    int gpus;                       /* DeviceRequests count for nvidia GPUs, 0 = none, -1 = all
                                       (every container gets the first ones: use devices) */
    const char *const *devices;     /* NULL-terminated CDI names of the GPUs to attach, exactly
                                       ("nvidia.com/gpu=0"), with device_ids; may be NULL */
    const char *const *device_ids;  /* the same GPUs as Docker DeviceIDs ("0", a UUID) */
    int libpod;                     /* with devices: create through Podman's libpod API, the one
                                       that attaches CDI devices (its Docker-compatible API
                                       ignores DeviceRequests); else DeviceRequests with
                                       DeviceIDs (Docker and the NVIDIA runtime) */
    const char *working_dir;        /* may be NULL */
    /* Confinement (docs/job-sandbox.md). Zero values leave the engine's defaults. Privileged is
       always false, and no host namespace is ever asked for. */
    int cap_drop_all;           /* CapDrop ["ALL"] */
    const char *const *cap_add; /* NULL-terminated CapAdd ("CHOWN", ...), may be NULL */
    int no_new_privileges;      /* SecurityOpt ["no-new-privileges"] */
    const char *seccomp;        /* SecurityOpt "seccomp=<this>": a profile's path on the
                                   engine's host (Podman) or its JSON (Docker); NULL = the
                                   engine's default profile */
    int64_t pids_limit;         /* PidsLimit, 0 = engine default */
    int readonly_rootfs;        /* ReadonlyRootfs */
    const char *const *tmpfs;   /* NULL-terminated "/path:options" (Tmpfs), may be NULL */
    int64_t shm_bytes;          /* ShmSize of /dev/shm, 0 = engine default */
    const char *userns_mode;    /* UsernsMode ("auto", ...), NULL = engine default */
};

/* 1 when the engine is Podman's compatible service (GET /version lists a "Podman Engine"
   component), 0 for another (Docker), or -TY_EENGINE. */
int docker_is_podman(struct docker *d, struct ty_err *err);

/* Creates a container. OUT: id (64 hex + NUL, so n >= 65). 0 or -TY_EENGINE (message from the
   engine, e.g. "no such image"). */
int docker_create(struct docker *d, const struct docker_create *c, char *id, size_t n,
                  struct ty_err *err);
int docker_start(struct docker *d, const char *id, struct ty_err *err);
/* Renames container id to name (both names of letters, digits and ._-). 0, -TY_ENOTFOUND, or
   -TY_EENGINE (a container of that name exists: 409). */
int docker_rename(struct docker *d, const char *id, const char *name, struct ty_err *err);
/* Sends signal ("SIGTERM", "SIGKILL") to the container's main process. A container that is
   not running is not an error. */
int docker_kill(struct docker *d, const char *id, const char *signal, struct ty_err *err);

struct docker_state {
    int running;        /* 1 while running */
    int exit_code;      /* valid when !running */
    int oom_killed;     /* 1 when the kernel killed it for memory */
    char status[32];    /* "created", "running", "exited", ... */
    double started_at;  /* epoch seconds, 0 when unknown */
    double finished_at; /* epoch seconds, 0 when unknown */
    int pid;            /* State.Pid: its main process on the engine's host, 0 when not running */
    char log_path[512]; /* LogPath: its log file on the engine's host, "" when none */
    char id[72];        /* Id (asked by name: which container that is), "" when none */
};
/* GET /containers/{id}/json. 0, -TY_ENOTFOUND for an unknown container, or -TY_EENGINE. */
int docker_inspect(struct docker *d, const char *id, struct docker_state *st, struct ty_err *err);

/* A container's resource use at one moment (GET /containers/{id}/stats?stream=false). */
struct docker_stats {
    double cpu_total_ns; /* cpu_stats.cpu_usage.total_usage */
    double system_ns;    /* cpu_stats.system_cpu_usage (0 when the engine gives none) */
    int online_cpus;     /* cpu_stats.online_cpus (0 when absent) */
    double mem_usage;    /* memory_stats.usage, bytes */
    double mem_limit;    /* memory_stats.limit, bytes (0 when absent) */
};
/* OUT: *st. 0 or -TY_EENGINE (container gone, engine away). */
int docker_stats(struct docker *d, const char *id, struct docker_stats *st, struct ty_err *err);

/* Blocks until the container exits (POST /containers/{id}/wait); OUT: exit code. */
int docker_wait(struct docker *d, const char *id, int *exit_code, struct ty_err *err);

/*
 * Called once per complete log line (without the trailing newline; a final partial line is
 * delivered at end of stream). ts_ms is the engine's timestamp of the line in epoch ms
 * (timestamps=1), is_stderr says which stream. Return nonzero to stop reading.
 */
typedef int (*docker_line_cb)(const char *line, size_t len, int64_t ts_ms, int is_stderr, void *ud);

/*
 * Reads the container's stdout and stderr with timestamps, following until the container
 * exits when follow is nonzero, calling cb for each line. since_s: only lines after this epoch
 * second (0 = all). Works for both multiplexed (no TTY) and raw streams.
 */
int docker_logs(struct docker *d, const char *id, int follow, int64_t since_s, docker_line_cb cb,
                void *ud, struct ty_err *err);

/*
 * Reading a container's log file by position, where the engine's host is this host: the file
 * its inspect names (LogPath), in Podman's k8s-file form ("<RFC 3339> stdout|stderr F|P
 * <text>") or Docker's json-file form ({"log": "...\n", "stream": ..., "time": ...}). Unlike
 * the logs API (Podman 4.3's follow mode misorders lines, splits them and can end early), the
 * file holds each record once, in the order conmon or dockerd wrote it: a byte offset is a
 * place that never moves. Partial records (P; a json-file "log" without its newline) are joined
 * into one line before it is delivered. Not thread-safe per reader.
 */
struct docker_logfile;

/* new: a reader of the log file at path from its start (close with docker_logfile_close);
   NULL with err (-TY_ENOTFOUND: no such file, -TY_EIO: not readable). max_line: the longest
   line delivered (the rest of a longer one is dropped). */
struct docker_logfile *docker_logfile_open(const char *path, size_t max_line, struct ty_err *err);
/*
 * Delivers every complete line appended since the last call to cb, in file order (ts_ms from
 * the record, is_stderr from its stream; a record in neither form is delivered as it is, on
 * stdout, with ts_ms 0). Returns the number of lines delivered (0: nothing new) or -TY_EIO.
 * A cb that returns nonzero stops the read (the next call goes on after that line).
 */
long docker_logfile_read(struct docker_logfile *f, docker_line_cb cb, void *ud, struct ty_err *err);
/* End of the log: delivers a partial line still waiting for its end, if any. 1 or 0. */
int docker_logfile_finish(struct docker_logfile *f, docker_line_cb cb, void *ud);
/* Byte offset of the first record not yet delivered. */
uint64_t docker_logfile_offset(const struct docker_logfile *f);
void docker_logfile_close(struct docker_logfile *f);

/* Removes a container (force kills a running one). Unknown containers are not an error. */
int docker_remove(struct docker *d, const char *id, int force, struct ty_err *err);

/* Tags image src (name or id) as repo_tag. 0 or error. */
int docker_image_tag(struct docker *d, const char *src, const char *repo_tag, struct ty_err *err);
/* Removes the name image (a tag: the image goes with its last tag); a missing one is not an
   error (0); one a container uses is (-TY_EENGINE). */
int docker_image_remove(struct docker *d, const char *image, struct ty_err *err);
/* new: the engine's images (GET /images/json: Id, RepoTags, ...), NULL with err. */
json_t *docker_image_list(struct docker *d, struct ty_err *err);

/* Creates a bridge network name with DNS between its containers (labels borrowed, may be
   NULL). internal: no default route and no NAT out ("Internal": true); the host keeps the
   bridge's gateway address (fence.h closes it). bridge: the host interface name
   (com.docker.network.bridge.name, at most 15 characters), NULL = the engine's choice. An
   existing network of that name is not an error (0). */
int docker_network_create(struct docker *d, const char *name, int internal, const char *bridge,
                          json_t *labels, struct ty_err *err);
/* Removes network name; a missing one is not an error (0). */
int docker_network_remove(struct docker *d, const char *name, struct ty_err *err);

/* new: array of container summaries (Id, Names, Labels, State) with label filter "k=v"
   (NULL = all), including stopped ones. */
json_t *docker_list(struct docker *d, const char *label_filter, struct ty_err *err);

#endif
