/*
 * tuning_strategy.c - parameter spaces, range scaling, Random/Grid/Bayesian/Hyperband
 * suggestions and the median stopping rule (tuning_strategy.h; the method is in
 * docs/tuning.md).
 */
#include "tuning_strategy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUNING_CANDIDATES 1500  /* random candidates per Bayesian suggestion */
#define TUNING_LOCAL      300   /* candidates around the best observations */
#define TUNING_XI         0.01  /* exploration margin of expected improvement */
#define TUNING_NOISE      1e-3  /* observation noise (standardised units) */
#define TUNING_AUTO_RATIO 100.0 /* Auto: logarithmic when Max/Min >= this and Min > 0 */

static const char *tuning_str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* Parses a MinValue/MaxValue string ("1e-3", "10") strictly. 0 or -1. */
static int tuning_num(const char *s, double *out)
{
    char *end;
    double v;
    if (!s || !*s)
        return -1;
    v = strtod(s, &end);
    if (*end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int tuning_add_numeric(struct tuning_space *sp, json_t *r, enum tuning_kind kind,
                              const char *field, struct ty_err *err)
{
    struct tuning_param *p;
    const char *name = tuning_str(r, "Name"), *scale = tuning_str(r, "ScalingType");

    if (sp->n >= TUNING_MAX_PARAMS)
        return ty_err_set(err, TY_EINVAL, field, "The total number of ranges must not exceed %d.",
                          TUNING_MAX_PARAMS);
    p = &sp->p[sp->n];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
    p->kind = kind;
    if (tuning_num(tuning_str(r, "MinValue"), &p->lo) ||
        tuning_num(tuning_str(r, "MaxValue"), &p->hi))
        return ty_err_set(err, TY_EINVAL, field,
                          "The MinValue and MaxValue of hyperparameter '%s' must be numbers.",
                          p->name);
    if (kind == TUNING_INTEGER && (p->lo != floor(p->lo) || p->hi != floor(p->hi)))
        return ty_err_set(err, TY_EINVAL, field,
                          "The MinValue and MaxValue of integer hyperparameter '%s' must be "
                          "integers.",
                          p->name);
    if (p->lo > p->hi)
        return ty_err_set(err, TY_EINVAL, field,
                          "The MinValue of hyperparameter '%s' must be less than or equal to its "
                          "MaxValue.",
                          p->name);
    p->scale = TUNING_LINEAR;
    if (!scale || strcmp(scale, "Auto") == 0) {
        if (p->lo > 0 && p->hi / p->lo >= TUNING_AUTO_RATIO)
            p->scale = TUNING_LOG;
    } else if (strcmp(scale, "Logarithmic") == 0) {
        if (p->lo <= 0)
            return ty_err_set(err, TY_EINVAL, field,
                              "Logarithmic scaling of hyperparameter '%s' requires a MinValue "
                              "greater than 0.",
                              p->name);
        p->scale = TUNING_LOG;
    } else if (strcmp(scale, "ReverseLogarithmic") == 0) {
        if (kind == TUNING_INTEGER || p->lo < 0 || p->hi >= 1)
            return ty_err_set(err, TY_EINVAL, field,
                              "ReverseLogarithmic scaling of hyperparameter '%s' requires a "
                              "continuous range within [0, 1).",
                              p->name);
        p->scale = TUNING_REVLOG;
    }
    sp->n++;
    return 0;
}

void tuning_space_cleanup(struct tuning_space *sp)
{
    for (int i = 0; i < sp->n && i < TUNING_MAX_PARAMS; i++)
        for (int k = 0; k < sp->p[i].nvalues; k++)
            free(sp->p[i].values[k]);
    sp->n = 0;
}

int tuning_space_parse(json_t *ranges, struct tuning_space *sp, struct ty_err *err)
{
    json_t *r;
    size_t i;
    int rc;

    memset(sp, 0, sizeof(*sp));
    json_array_foreach(json_object_get(ranges, "IntegerParameterRanges"), i, r)
    {
        if ((rc = tuning_add_numeric(sp, r, TUNING_INTEGER, "IntegerParameterRanges", err)))
            return rc;
    }
    json_array_foreach(json_object_get(ranges, "ContinuousParameterRanges"), i, r)
    {
        if ((rc = tuning_add_numeric(sp, r, TUNING_CONTINUOUS, "ContinuousParameterRanges", err)))
            return rc;
    }
    json_array_foreach(json_object_get(ranges, "CategoricalParameterRanges"), i, r)
    {
        struct tuning_param *p;
        json_t *v, *vals = json_object_get(r, "Values");
        size_t k;
        if (sp->n >= TUNING_MAX_PARAMS)
            return ty_err_set(err, TY_EINVAL, "CategoricalParameterRanges",
                              "The total number of ranges must not exceed %d.", TUNING_MAX_PARAMS);
        p = &sp->p[sp->n];
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "%s",
                 tuning_str(r, "Name") ? tuning_str(r, "Name") : "");
        p->kind = TUNING_CATEGORICAL;
        sp->n++;
        json_array_foreach(vals, k, v)
        {
            if (!json_is_string(v) || p->nvalues >= TUNING_MAX_VALUES)
                continue;
            if (!(p->values[p->nvalues] = strdup(json_string_value(v))))
                return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            p->nvalues++;
        }
        if (p->nvalues == 0)
            return ty_err_set(err, TY_EINVAL, "CategoricalParameterRanges",
                              "Categorical hyperparameter '%s' has no values.", p->name);
    }
    if (sp->n == 0)
        return ty_err_set(err, TY_EINVAL, "ParameterRanges",
                          "The tuning job must have at least one hyperparameter range.");
    for (int a = 0; a < sp->n; a++)
        for (int b = a + 1; b < sp->n; b++)
            if (strcmp(sp->p[a].name, sp->p[b].name) == 0)
                return ty_err_set(err, TY_EINVAL, "ParameterRanges",
                                  "Hyperparameter '%s' is defined more than once.", sp->p[a].name);
    return 0;
}

static double tuning_clamp(double u)
{
    return u < 0 ? 0 : u > 1 ? 1 : u;
}

double tuning_param_value(const struct tuning_param *p, double u)
{
    double x;
    u = tuning_clamp(u);
    if (p->kind == TUNING_CATEGORICAL) {
        int k = (int)floor(u * p->nvalues);
        return k >= p->nvalues ? p->nvalues - 1 : k;
    }
    switch (p->scale) {
    case TUNING_LOG:
        x = exp(log(p->lo) + u * (log(p->hi) - log(p->lo)));
        break;
    case TUNING_REVLOG:
        x = 1.0 - exp(log(1.0 - p->lo) + u * (log(1.0 - p->hi) - log(1.0 - p->lo)));
        break;
    default:
        x = p->lo + u * (p->hi - p->lo);
    }
    if (p->kind == TUNING_INTEGER) {
        /* each integer gets an equal share of the (scaled) interval */
        if (p->scale == TUNING_LINEAR)
            x = floor(p->lo + u * (p->hi - p->lo + 1));
        else
            x = round(x);
        if (x > p->hi)
            x = p->hi;
    }
    return x < p->lo ? p->lo : x > p->hi ? p->hi : x;
}

double tuning_param_unit(const struct tuning_param *p, double x, const char *s)
{
    if (p->kind == TUNING_CATEGORICAL) {
        for (int k = 0; k < p->nvalues; k++)
            if (s && strcmp(p->values[k], s) == 0)
                return (k + 0.5) / p->nvalues;
        return -1;
    }
    if (p->hi <= p->lo)
        return 0.5;
    if (x < p->lo)
        x = p->lo;
    if (x > p->hi)
        x = p->hi;
    if (p->kind == TUNING_INTEGER && p->scale == TUNING_LINEAR)
        return tuning_clamp((x - p->lo + 0.5) / (p->hi - p->lo + 1));
    switch (p->scale) {
    case TUNING_LOG:
        return tuning_clamp((log(x) - log(p->lo)) / (log(p->hi) - log(p->lo)));
    case TUNING_REVLOG:
        return tuning_clamp((log(1.0 - x) - log(1.0 - p->lo)) /
                            (log(1.0 - p->hi) - log(1.0 - p->lo)));
    default:
        return tuning_clamp((x - p->lo) / (p->hi - p->lo));
    }
}

json_t *tuning_point_params(const struct tuning_space *sp, const double *u)
{
    json_t *o = json_object();
    char buf[64];
    for (int i = 0; o && i < sp->n; i++) {
        const struct tuning_param *p = &sp->p[i];
        double x = tuning_param_value(p, u[i]);
        if (p->kind == TUNING_CATEGORICAL) {
            json_object_set_new(o, p->name, json_string(p->values[(int)x]));
            continue;
        }
        if (p->kind == TUNING_INTEGER)
            snprintf(buf, sizeof(buf), "%lld", (long long)x);
        else
            snprintf(buf, sizeof(buf), "%.10g", x);
        json_object_set_new(o, p->name, json_string(buf));
    }
    return o;
}

int tuning_point_of(const struct tuning_space *sp, json_t *hp, double *u)
{
    for (int i = 0; i < sp->n; i++) {
        const struct tuning_param *p = &sp->p[i];
        const char *s = json_string_value(json_object_get(hp, p->name));
        double x = 0;
        if (p->kind == TUNING_CATEGORICAL) {
            u[i] = tuning_param_unit(p, 0, s);
            if (u[i] < 0)
                return -1;
            continue;
        }
        if (!s || tuning_num(s, &x) != 0)
            x = (p->lo + p->hi) / 2;
        u[i] = tuning_param_unit(p, x, NULL);
    }
    return 0;
}

/* Number of distinct values of a grid dimension; 0 for continuous. */
static long long tuning_levels(const struct tuning_param *p)
{
    if (p->kind == TUNING_CATEGORICAL)
        return p->nvalues;
    if (p->kind == TUNING_INTEGER)
        return (long long)(p->hi - p->lo) + 1;
    return 0;
}

long long tuning_grid_size(const struct tuning_space *sp)
{
    long long n = 1;
    for (int i = 0; i < sp->n; i++) {
        long long l = tuning_levels(&sp->p[i]);
        if (l <= 0)
            return 0;
        if (n > 1000000000LL / l)
            return 1000000000LL;
        n *= l;
    }
    return n;
}

void tuning_grid_point(const struct tuning_space *sp, long long index, double *u)
{
    for (int i = 0; i < sp->n; i++) {
        const struct tuning_param *p = &sp->p[i];
        long long l = tuning_levels(p), k;
        if (l <= 0)
            l = 1;
        k = index % l;
        index /= l;
        if (p->kind == TUNING_INTEGER)
            u[i] = tuning_param_unit(p, p->lo + (double)k, NULL);
        else
            u[i] = (k + 0.5) / (double)l;
    }
}

static uint64_t tuning_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t tuning_rand_seed(const char *name, long long index)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a of the name, then mixed with the index */
    for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    h ^= (uint64_t)index * 0xD1B54A32D192ED03ULL;
    h = tuning_splitmix(&h);
    return h ? h : 1;
}

double tuning_rand_unit(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* ---- Gaussian process (Matern 5/2, one length scale on the unit cube) ---- */

struct tuning_gp {
    int m, d;
    const double *x; /* m x d, borrowed */
    double *alpha;   /* K^-1 y */
    double *L;       /* Cholesky factor of K, m x m */
    double ls;
};

static double tuning_kernel(const double *a, const double *b, int d, double ls)
{
    double r2 = 0, r;
    for (int i = 0; i < d; i++)
        r2 += (a[i] - b[i]) * (a[i] - b[i]);
    r = sqrt(5.0 * r2) / ls;
    return (1.0 + r + r * r / 3.0) * exp(-r);
}

/* In-place Cholesky of the m x m matrix a (lower). 0, or -1 when not positive definite. */
static int tuning_cholesky(double *a, int m)
{
    for (int j = 0; j < m; j++) {
        double s = a[j * m + j];
        for (int k = 0; k < j; k++)
            s -= a[j * m + k] * a[j * m + k];
        if (s <= 0)
            return -1;
        a[j * m + j] = sqrt(s);
        for (int i = j + 1; i < m; i++) {
            double t = a[i * m + j];
            for (int k = 0; k < j; k++)
                t -= a[i * m + k] * a[j * m + k];
            a[i * m + j] = t / a[j * m + j];
        }
        for (int i = 0; i < j; i++)
            a[i * m + j] = 0;
    }
    return 0;
}

/* Solves L z = b (forward) into z. */
static void tuning_fwd(const double *L, int m, const double *b, double *z)
{
    for (int i = 0; i < m; i++) {
        double s = b[i];
        for (int k = 0; k < i; k++)
            s -= L[i * m + k] * z[k];
        z[i] = s / L[i * m + i];
    }
}

/* Solves L^T z = b (backward) into z. */
static void tuning_bwd(const double *L, int m, const double *b, double *z)
{
    for (int i = m - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < m; k++)
            s -= L[k * m + i] * z[k];
        z[i] = s / L[i * m + i];
    }
}

/* Fits the GP with length scale ls; returns the log marginal likelihood (-inf on failure). */
static double tuning_gp_fit(struct tuning_gp *g, const double *y, double ls)
{
    int m = g->m;
    double *tmp = malloc(sizeof(double) * (size_t)m), lml = 0;
    if (!tmp)
        return -INFINITY;
    g->ls = ls;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            g->L[i * m + j] = tuning_kernel(&g->x[i * g->d], &g->x[j * g->d], g->d, ls) +
                              (i == j ? TUNING_NOISE : 0);
    if (tuning_cholesky(g->L, m) != 0) {
        free(tmp);
        return -INFINITY;
    }
    tuning_fwd(g->L, m, y, tmp);
    tuning_bwd(g->L, m, tmp, g->alpha);
    for (int i = 0; i < m; i++)
        lml -= 0.5 * y[i] * g->alpha[i] + log(g->L[i * m + i]);
    free(tmp);
    return lml;
}

static void tuning_gp_predict(const struct tuning_gp *g, const double *u, double *kv, double *z,
                              double *mu, double *sd)
{
    double v = 1.0 + TUNING_NOISE, mean = 0;
    for (int i = 0; i < g->m; i++) {
        kv[i] = tuning_kernel(u, &g->x[i * g->d], g->d, g->ls);
        mean += kv[i] * g->alpha[i];
    }
    tuning_fwd(g->L, g->m, kv, z);
    for (int i = 0; i < g->m; i++)
        v -= z[i] * z[i];
    *mu = mean;
    *sd = v > 1e-12 ? sqrt(v) : 1e-6;
}

static double tuning_ei(double mu, double sd, double best)
{
    double imp = best - mu - TUNING_XI, zz = imp / sd;
    double cdf = 0.5 * erfc(-zz / sqrt(2.0)), pdf = exp(-0.5 * zz * zz) / sqrt(2.0 * M_PI);
    return imp * cdf + sd * pdf;
}

/* Bayesian suggestion; returns -1 when it cannot fit (the caller falls back to random). */
static int tuning_bayes(const struct tuning_space *sp, uint64_t *rng, const struct tuning_obs *obs,
                        size_t nobs, double *u)
{
    static const double scales[] = {0.1, 0.2, 0.35, 0.6, 1.0};
    int d = sp->n, m = 0, rc = -1, best_i = 0;
    double *x = NULL, *y = NULL, *kv = NULL, *z = NULL, mean = 0, var = 0, best_lml = -INFINITY;
    double best_ls = 0.35, best_y, best_ei = -1, cand[TUNING_MAX_PARAMS];
    struct tuning_gp g;
    size_t first = 0, k;

    memset(&g, 0, sizeof(g));
    for (k = nobs; k > 0; k--) /* the most recent TUNING_MAX_OBS observations */
        if (obs[k - 1].has_y && ++m == TUNING_MAX_OBS) {
            first = k - 1;
            break;
        }
    if (m < TUNING_BAYES_INIT)
        return -1;
    x = malloc(sizeof(double) * (size_t)m * (size_t)d);
    y = malloc(sizeof(double) * (size_t)m);
    kv = malloc(sizeof(double) * (size_t)m);
    z = malloc(sizeof(double) * (size_t)m);
    g.L = malloc(sizeof(double) * (size_t)m * (size_t)m);
    g.alpha = malloc(sizeof(double) * (size_t)m);
    if (!x || !y || !kv || !z || !g.L || !g.alpha)
        goto out;
    m = 0;
    for (k = first; k < nobs; k++) {
        if (!obs[k].has_y)
            continue;
        memcpy(&x[m * d], obs[k].u, sizeof(double) * (size_t)d);
        y[m++] = obs[k].y;
    }
    for (int i = 0; i < m; i++)
        mean += y[i] / m;
    for (int i = 0; i < m; i++)
        var += (y[i] - mean) * (y[i] - mean) / m;
    var = var > 1e-24 ? sqrt(var) : 1.0;
    best_y = INFINITY;
    for (int i = 0; i < m; i++) {
        y[i] = (y[i] - mean) / var;
        if (y[i] < best_y) {
            best_y = y[i];
            best_i = i;
        }
    }
    g.m = m;
    g.d = d;
    g.x = x;
    for (size_t s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
        double lml = tuning_gp_fit(&g, y, scales[s]);
        if (lml > best_lml) {
            best_lml = lml;
            best_ls = scales[s];
        }
    }
    if (!isfinite(best_lml) || !isfinite(tuning_gp_fit(&g, y, best_ls)))
        goto out;
    for (int c = 0; c < TUNING_CANDIDATES + TUNING_LOCAL; c++) {
        double mu, sd, ei;
        for (int i = 0; i < d; i++) {
            if (c < TUNING_CANDIDATES) {
                cand[i] = tuning_rand_unit(rng);
            } else { /* a Gaussian step (Box-Muller) around the best point */
                double r1 = tuning_rand_unit(rng), r2 = tuning_rand_unit(rng);
                double step = sqrt(-2.0 * log(r1 > 1e-300 ? r1 : 1e-300)) * cos(2 * M_PI * r2);
                cand[i] = tuning_clamp(x[best_i * d + i] + 0.08 * step);
            }
        }
        tuning_gp_predict(&g, cand, kv, z, &mu, &sd);
        ei = tuning_ei(mu, sd, best_y);
        if (ei > best_ei) {
            best_ei = ei;
            memcpy(u, cand, sizeof(double) * (size_t)d);
        }
    }
    rc = best_ei >= 0 ? 0 : -1;
out:
    free(x);
    free(y);
    free(kv);
    free(z);
    free(g.L);
    free(g.alpha);
    return rc;
}

void tuning_suggest(enum tuning_strategy_kind k, const struct tuning_space *sp, uint64_t seed,
                    const struct tuning_obs *obs, size_t nobs, double *u)
{
    uint64_t rng = seed ? seed : 1;
    for (int i = 0; i < sp->n; i++)
        u[i] = tuning_rand_unit(&rng);
    if (k == TUNING_BAYESIAN)
        tuning_bayes(sp, &rng, obs, nobs, u); /* keeps the random point when it cannot fit */
}

static int tuning_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int tuning_median_stop(const double *mine, size_t t, const double *const *series,
                       const size_t *lens, size_t n)
{
    double best = INFINITY, means[512], med;
    size_t nm = 0;

    if (t == 0)
        return 0;
    for (size_t i = 0; i < t; i++)
        if (mine[i] < best)
            best = mine[i];
    for (size_t j = 0; j < n && nm < sizeof(means) / sizeof(means[0]); j++) {
        double s = 0;
        if (lens[j] < t)
            continue;
        for (size_t i = 0; i < t; i++)
            s += series[j][i];
        means[nm++] = s / (double)t;
    }
    if (nm < 3)
        return 0;
    qsort(means, nm, sizeof(double), tuning_cmp);
    med = nm % 2 ? means[nm / 2] : (means[nm / 2 - 1] + means[nm / 2]) / 2;
    return best > med;
}

int tuning_hyperband_stop(const double *mine, size_t t, const double *const *series,
                          const size_t *lens, size_t n)
{
    double best = INFINITY, bests[512];
    size_t rung = 1, nb = 0, better = 0, keep;

    while (rung * TUNING_HYPERBAND_ETA <= t)
        rung *= TUNING_HYPERBAND_ETA;
    if (t == 0 || rung != t)
        return 0; /* only at a rung */
    for (size_t i = 0; i < t; i++)
        best = mine[i] < best ? mine[i] : best;
    for (size_t j = 0; j < n && nb < sizeof(bests) / sizeof(bests[0]); j++) {
        double b = INFINITY;
        if (lens[j] < t)
            continue;
        for (size_t i = 0; i < t; i++)
            b = series[j][i] < b ? series[j][i] : b;
        bests[nb++] = b;
    }
    if (nb + 1 < TUNING_HYPERBAND_ETA)
        return 0;
    for (size_t j = 0; j < nb; j++)
        better += bests[j] < best;
    keep = (nb + 1) / TUNING_HYPERBAND_ETA;
    if (keep < 1)
        keep = 1;
    return better >= keep;
}
