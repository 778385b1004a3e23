/*
 * test_tuning.c - the hyperparameter tuning strategies (tuning_strategy.h): range parsing and
 * its errors, Linear/Logarithmic/ReverseLogarithmic/Auto scaling and their inverses, the text
 * forms of suggested values, the grid covering every point once, determinism with a seed,
 * Bayesian optimisation beating random search on toy objectives on average, and the median
 * stopping rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tuning_strategy.h"

static json_t *ranges(const char *text)
{
    json_error_t e;
    json_t *r = json_loads(text, 0, &e);
    assert_non_null(r);
    return r;
}

static void test_parse_and_scale(void **state)
{
    struct tuning_space sp;
    struct ty_err err;
    json_t *r = ranges("{\"IntegerParameterRanges\":[{\"Name\":\"epochs\",\"MinValue\":\"1\","
                       "\"MaxValue\":\"10\"}],"
                       "\"ContinuousParameterRanges\":["
                       "{\"Name\":\"lr\",\"MinValue\":\"0.0001\",\"MaxValue\":\"1\","
                       "\"ScalingType\":\"Logarithmic\"},"
                       "{\"Name\":\"mom\",\"MinValue\":\"0.9\",\"MaxValue\":\"0.999\","
                       "\"ScalingType\":\"ReverseLogarithmic\"},"
                       "{\"Name\":\"wd\",\"MinValue\":\"0.001\",\"MaxValue\":\"10\","
                       "\"ScalingType\":\"Auto\"},"
                       "{\"Name\":\"drop\",\"MinValue\":\"0\",\"MaxValue\":\"0.5\"}],"
                       "\"CategoricalParameterRanges\":[{\"Name\":\"opt\",\"Values\":[\"sgd\","
                       "\"adam\",\"rmsprop\"]}]}");
    (void)state;
    ty_err_clear(&err);
    assert_int_equal(tuning_space_parse(r, &sp, &err), 0);
    assert_int_equal(sp.n, 6);
    /* integers: each value an equal share of [0,1] */
    assert_true(tuning_param_value(&sp.p[0], 0.0) == 1);
    assert_true(tuning_param_value(&sp.p[0], 0.999) == 10);
    assert_true(tuning_param_value(&sp.p[0], 0.05) == 1);
    assert_true(tuning_param_value(&sp.p[0], 0.15) == 2);
    /* logarithmic: the middle of the unit interval is the geometric mean */
    assert_int_equal(sp.p[1].scale, TUNING_LOG);
    assert_true(fabs(tuning_param_value(&sp.p[1], 0.5) - 0.01) < 1e-12);
    assert_true(fabs(tuning_param_unit(&sp.p[1], 0.001, NULL) - 0.25) < 1e-12);
    /* reverse logarithmic: dense near 1 */
    assert_int_equal(sp.p[2].scale, TUNING_REVLOG);
    assert_true(fabs(tuning_param_value(&sp.p[2], 0.0) - 0.9) < 1e-12);
    assert_true(fabs(tuning_param_value(&sp.p[2], 1.0) - 0.999) < 1e-12);
    assert_true(fabs(tuning_param_value(&sp.p[2], 0.5) - (1 - sqrt(0.1 * 0.001))) < 1e-12);
    /* Auto: four decades -> logarithmic; [0, 0.5] -> linear */
    assert_int_equal(sp.p[3].scale, TUNING_LOG);
    assert_int_equal(sp.p[4].scale, TUNING_LINEAR);
    assert_true(fabs(tuning_param_value(&sp.p[4], 0.5) - 0.25) < 1e-12);
    /* inverses round-trip */
    for (double u = 0.01; u < 1; u += 0.07)
        for (int i = 1; i < 5; i++)
            assert_true(fabs(tuning_param_unit(&sp.p[i], tuning_param_value(&sp.p[i], u), NULL) -
                             u) < 1e-9);
    /* categorical */
    assert_true(tuning_param_value(&sp.p[5], 0.0) == 0);
    assert_true(tuning_param_value(&sp.p[5], 0.5) == 1);
    assert_true(tuning_param_value(&sp.p[5], 1.0) == 2);
    assert_true(fabs(tuning_param_unit(&sp.p[5], 0, "rmsprop") - 5.0 / 6.0) < 1e-12);
    assert_true(tuning_param_unit(&sp.p[5], 0, "lbfgs") < 0);
    {
        double u[6] = {0.999, 0.5, 0, 0, 0.5, 0.4};
        json_t *hp = tuning_point_params(&sp, u);
        double back[6];
        assert_string_equal(json_string_value(json_object_get(hp, "epochs")), "10");
        assert_string_equal(json_string_value(json_object_get(hp, "lr")), "0.01");
        assert_string_equal(json_string_value(json_object_get(hp, "mom")), "0.9");
        assert_string_equal(json_string_value(json_object_get(hp, "opt")), "adam");
        assert_int_equal(tuning_point_of(&sp, hp, back), 0);
        assert_true(fabs(back[1] - 0.5) < 1e-9);
        json_decref(hp);
    }
    tuning_space_cleanup(&sp);
    json_decref(r);
}

static void test_parse_errors(void **state)
{
    static const char *const bad[] = {
        "{}",
        "{\"IntegerParameterRanges\":[{\"Name\":\"a\",\"MinValue\":\"x\",\"MaxValue\":\"2\"}]}",
        "{\"IntegerParameterRanges\":[{\"Name\":\"a\",\"MinValue\":\"3\",\"MaxValue\":\"2\"}]}",
        "{\"IntegerParameterRanges\":[{\"Name\":\"a\",\"MinValue\":\"1.5\",\"MaxValue\":\"2\"}]}",
        "{\"ContinuousParameterRanges\":[{\"Name\":\"a\",\"MinValue\":\"0\",\"MaxValue\":\"2\","
        "\"ScalingType\":\"Logarithmic\"}]}",
        "{\"ContinuousParameterRanges\":[{\"Name\":\"a\",\"MinValue\":\"0.5\",\"MaxValue\":\"1\","
        "\"ScalingType\":\"ReverseLogarithmic\"}]}",
        "{\"CategoricalParameterRanges\":[{\"Name\":\"a\",\"Values\":[\"x\"]},"
        "{\"Name\":\"a\",\"Values\":[\"y\"]}]}",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tuning_space sp;
        struct ty_err err;
        json_t *r = ranges(bad[i]);
        ty_err_clear(&err);
        assert_int_equal(tuning_space_parse(r, &sp, &err), -TY_EINVAL);
        assert_true(err.msg[0] != '\0');
        tuning_space_cleanup(&sp);
        json_decref(r);
    }
}

static void test_grid_covers(void **state)
{
    struct tuning_space sp;
    struct ty_err err;
    json_t *r = ranges("{\"IntegerParameterRanges\":[{\"Name\":\"n\",\"MinValue\":\"2\","
                       "\"MaxValue\":\"4\"}],\"CategoricalParameterRanges\":[{\"Name\":\"c\","
                       "\"Values\":[\"a\",\"b\",\"c\",\"d\"]}]}");
    json_t *seen = json_object();
    (void)state;
    assert_int_equal(tuning_space_parse(r, &sp, &err), 0);
    assert_int_equal(tuning_grid_size(&sp), 12);
    for (long long k = 0; k < 12; k++) {
        double u[2];
        char key[64];
        json_t *hp;
        tuning_grid_point(&sp, k, u);
        hp = tuning_point_params(&sp, u);
        snprintf(key, sizeof(key), "%s/%s", json_string_value(json_object_get(hp, "n")),
                 json_string_value(json_object_get(hp, "c")));
        assert_null(json_object_get(seen, key)); /* every point once */
        json_object_set_new(seen, key, json_true());
        json_decref(hp);
    }
    assert_int_equal(json_object_size(seen), 12);
    tuning_space_cleanup(&sp);
    json_decref(r);
    json_decref(seen);
    /* a continuous range makes the grid infinite */
    r = ranges("{\"ContinuousParameterRanges\":[{\"Name\":\"x\",\"MinValue\":\"0\",\"MaxValue\":"
               "\"1\"}]}");
    assert_int_equal(tuning_space_parse(r, &sp, &err), 0);
    assert_int_equal(tuning_grid_size(&sp), 0);
    tuning_space_cleanup(&sp);
    json_decref(r);
}

/* Toy objectives on [0,1]^d (lower is better). */
static double toy_bowl(const double *u, int d)
{
    double s = 0;
    for (int i = 0; i < d; i++)
        s += (u[i] - 0.23) * (u[i] - 0.23);
    return s;
}

static double toy_branin(const double *u, int d)
{
    double x = -5 + 15 * u[0], y = 15 * u[1];
    double a = y - 5.1 / (4 * M_PI * M_PI) * x * x + 5 / M_PI * x - 6;
    (void)d;
    return a * a + 10 * (1 - 1 / (8 * M_PI)) * cos(x) + 10;
}

static double run_search(enum tuning_strategy_kind k, const struct tuning_space *sp, int runs,
                         int budget, double (*f)(const double *, int))
{
    struct tuning_obs obs[32];
    double total = 0;
    for (int r = 0; r < runs; r++) {
        double best = INFINITY;
        char name[32];
        snprintf(name, sizeof(name), "toy-%d", r);
        for (int j = 0; j < budget; j++) {
            tuning_suggest(k, sp, tuning_rand_seed(name, j), obs, (size_t)j, obs[j].u);
            obs[j].y = f(obs[j].u, sp->n);
            obs[j].has_y = 1;
            if (obs[j].y < best)
                best = obs[j].y;
        }
        total += best;
    }
    return total / runs;
}

static void test_determinism(void **state)
{
    struct tuning_space sp;
    struct ty_err err;
    struct tuning_obs obs[8];
    double a[2], b[2];
    json_t *r =
        ranges("{\"ContinuousParameterRanges\":[{\"Name\":\"x\",\"MinValue\":\"0\","
               "\"MaxValue\":\"1\"},{\"Name\":\"y\",\"MinValue\":\"0\",\"MaxValue\":\"1\"}]}");
    (void)state;
    assert_int_equal(tuning_space_parse(r, &sp, &err), 0);
    for (int j = 0; j < 8; j++) {
        tuning_suggest(TUNING_RANDOM, &sp, tuning_rand_seed("det", j), NULL, 0, obs[j].u);
        obs[j].y = toy_bowl(obs[j].u, 2);
        obs[j].has_y = 1;
    }
    tuning_suggest(TUNING_BAYESIAN, &sp, tuning_rand_seed("det", 8), obs, 8, a);
    tuning_suggest(TUNING_BAYESIAN, &sp, tuning_rand_seed("det", 8), obs, 8, b);
    assert_memory_equal(a, b, sizeof(a));
    tuning_suggest(TUNING_RANDOM, &sp, tuning_rand_seed("det", 9), NULL, 0, a);
    tuning_suggest(TUNING_RANDOM, &sp, tuning_rand_seed("det", 10), NULL, 0, b);
    assert_true(a[0] != b[0]);
    tuning_space_cleanup(&sp);
    json_decref(r);
}

static void test_bayes_beats_random(void **state)
{
    struct tuning_space sp;
    struct ty_err err;
    double rnd, bay;
    json_t *r = ranges("{\"ContinuousParameterRanges\":[{\"Name\":\"x\",\"MinValue\":\"0\","
                       "\"MaxValue\":\"1\"},{\"Name\":\"y\",\"MinValue\":\"0\",\"MaxValue\":\"1\"},"
                       "{\"Name\":\"z\",\"MinValue\":\"0\",\"MaxValue\":\"1\"}]}");
    (void)state;
    assert_int_equal(tuning_space_parse(r, &sp, &err), 0);
    rnd = run_search(TUNING_RANDOM, &sp, 12, 15, toy_bowl);
    bay = run_search(TUNING_BAYESIAN, &sp, 12, 15, toy_bowl);
    printf("bowl(3d, 15 jobs, 12 runs): mean best random=%.5f bayesian=%.5f\n", rnd, bay);
    assert_true(bay < rnd);
    sp.n = 2;
    rnd = run_search(TUNING_RANDOM, &sp, 12, 15, toy_branin);
    bay = run_search(TUNING_BAYESIAN, &sp, 12, 15, toy_branin);
    printf("branin(2d, 15 jobs, 12 runs): mean best random=%.4f bayesian=%.4f (optimum 0.3979)\n",
           rnd, bay);
    assert_true(bay < rnd);
    sp.n = 3;
    tuning_space_cleanup(&sp);
    json_decref(r);
}

static void test_median_stop(void **state)
{
    double a[] = {1.0, 0.9, 0.8, 0.7}, b[] = {1.1, 1.0, 0.9, 0.8}, c[] = {0.9, 0.8, 0.7, 0.6};
    double good[] = {0.5, 0.4}, bad[] = {2.0, 1.9}, shortone[] = {0.1};
    const double *const series[] = {a, b, c, shortone};
    const size_t lens[] = {4, 4, 4, 1};
    (void)state;
    /* running means at t=2: 0.95, 1.05, 0.85 -> median 0.95 */
    assert_int_equal(tuning_median_stop(good, 2, series, lens, 4), 0);
    assert_int_equal(tuning_median_stop(bad, 2, series, lens, 4), 1);
    /* fewer than 3 jobs reached t: never stop */
    assert_int_equal(tuning_median_stop(bad, 2, series, lens, 2), 0);
    assert_int_equal(tuning_median_stop(bad, 0, series, lens, 4), 0);
}

static void test_hyperband_stop(void **state)
{
    double a[] = {0.5, 0.4, 0.3}, b[] = {0.6, 0.5, 0.4}, c[] = {0.7, 0.6, 0.5};
    double worst[] = {0.9, 0.8, 0.7}, best[] = {0.1, 0.1, 0.1};
    const double *const series[] = {a, b, c};
    const size_t lens[] = {3, 3, 3};
    (void)state;
    /* rung t=3: 4 jobs, keep the best (4/3 -> 1): the worst stops, the best goes on */
    assert_int_equal(tuning_hyperband_stop(worst, 3, series, lens, 3), 1);
    assert_int_equal(tuning_hyperband_stop(best, 3, series, lens, 3), 0);
    /* t=2 is no rung */
    assert_int_equal(tuning_hyperband_stop(worst, 2, series, lens, 3), 0);
    /* rung t=1 with too few jobs */
    assert_int_equal(tuning_hyperband_stop(worst, 1, series, lens, 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_scale),    cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_grid_covers),        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_bayes_beats_random), cmocka_unit_test(test_median_stop),
        cmocka_unit_test(test_hyperband_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
