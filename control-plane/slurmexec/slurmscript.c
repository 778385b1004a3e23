/*
 * slurmscript.c - a training job's Slurm job: name and batch script (slurmscript.h).
 */
#include "slurmscript.h"

#include "ty_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCRIPT_MAX 8192

void slurmscript_name(const char *deployment, const char *job, char *out, size_t n)
{
    snprintf(out, n, "ty-%.8s-%s", deployment ? deployment : "", job ? job : "");
}

/* 1 when s is 1 to 1023 characters, all of chars. */
static int script_word_ok(const char *s, const char *chars)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n < 1024 && strspn(s, chars) == n;
}

char *slurmscript_batch(const struct slurmscript_job *j)
{
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char path_chars[sizeof(alnum) + 8], name_chars[sizeof(alnum) + 2];
    struct ty_buf b;
    int rc;

    snprintf(path_chars, sizeof(path_chars), "%s/._-+", alnum);
    snprintf(name_chars, sizeof(name_chars), "%s-", alnum);
    if (!j || j->hosts < 1 || !script_word_ok(j->launcher, path_chars) || j->launcher[0] != '/' ||
        !script_word_ok(j->job, name_chars) || !script_word_ok(j->deployment, name_chars))
        return NULL;
    ty_buf_init(&b, SCRIPT_MAX);
    rc = ty_buf_printf(&b,
                       "#!/bin/sh\n"
                       "# trainyard training job %s (deployment %.8s): one launcher per node\n",
                       j->job, j->deployment);
    /* slurmrestd 22.05 ignores "requeue": false; a requeued job would run the script again */
    rc = rc ? rc
            : ty_buf_puts(&b, "scontrol update jobid=\"$SLURM_JOB_ID\" requeue=0 ||\n"
                              "  { echo 'trainyard: cannot turn off the requeue of this Slurm "
                              "job' >&2; exit 1; }\n"
                              "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then\n"
                              "  echo 'trainyard: Slurm requeued this job; the training script "
                              "is not run again' >&2\n"
                              "  exit 1\n"
                              "fi\n");
    rc = rc ? rc
            : ty_buf_printf(&b,
                            "if [ \"$SLURM_JOB_NUM_NODES\" != %d ]; then\n"
                            "  echo \"trainyard: %d nodes were asked, $SLURM_JOB_NUM_NODES "
                            "given\" >&2\n"
                            "  exit 1\n"
                            "fi\n"
                            "exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 '%s'\n",
                            j->hosts, j->hosts, j->launcher);
    if (rc) {
        ty_buf_cleanup(&b);
        return NULL;
    }
    return ty_buf_steal(&b);
}
