/*
 * symmrun's option parser (runtime/launcher/symmrun_args.c) in-process: every
 * spelling getopt_long allows (--opt=value, --opt value, unambiguous prefixes,
 * -n4, -np N, -- ending the options), the first non-option as the program
 * (its own options untouched), and usage errors that name the option. Each
 * case runs twice in a row: getopt's state must start afresh on every call.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "symm_test.h"
#include "symmrun_args.h"

static int failures;

/* argv after "symmrun", NULL-terminated; want: the result, then for RUN the
 * program's index, n, hosts, timeout and grace; for USAGE a text in err. */
static void expect(int line, const char *const *args, int want, int prog, long n, long hosts,
                   double timeout, double grace, const char *msg) {
    char *argv[32] = {"symmrun"};
    int argc = 1;
    for (; args[argc - 1]; argc++) argv[argc] = (char *)args[argc - 1];
    for (int round = 0; round < 2; round++) {
        symmrun_opts o;
        char err[256];
        int r = symmrun_parse_args(argc, argv, NULL, NULL, &o, err, sizeof err);
        bool ok = r == want;
        if (ok && r == SYMMRUN_ARGS_RUN)
            ok = o.prog == prog && o.n == n && o.hosts == hosts && o.timeout_s == timeout &&
                 (isinf(grace) ? isinf(o.grace_s) : o.grace_s == grace);
        if (ok && r == SYMMRUN_ARGS_USAGE) ok = strstr(err, msg) != NULL;
        if (!ok) {
            failures++;
            fprintf(stderr, "FAIL line %d round %d: result %d (want %d) prog %d n %ld hosts %ld "
                    "timeout %g grace %g err \"%s\" (want \"%s\")\n", line, round, r, want,
                    r == SYMMRUN_ARGS_RUN ? o.prog : -1, o.n, o.hosts, o.timeout_s, o.grace_s,
                    r == SYMMRUN_ARGS_USAGE ? err : "", msg ? msg : "");
        }
    }
}

#define A(...) ((const char *const[]){__VA_ARGS__, NULL})
#define RUN_(args, prog, n, hosts, tmo, grace) \
    expect(__LINE__, args, SYMMRUN_ARGS_RUN, prog, n, hosts, tmo, grace, NULL)
#define BAD_(args, msg) expect(__LINE__, args, SYMMRUN_ARGS_USAGE, 0, 0, 0, 0, 0, msg)

int main(void) {
    const double G = SYMMRUN_DEFAULT_GRACE_S;
    /* every spelling of a value */
    RUN_(A("-n", "4", "prog"), 3, 4, 0, 0, G);
    RUN_(A("-n4", "prog"), 2, 4, 0, 0, G);
    RUN_(A("--np=4", "prog"), 2, 4, 0, 0, G);
    RUN_(A("--np", "4", "prog"), 3, 4, 0, 0, G);
    RUN_(A("-np", "4", "prog"), 3, 4, 0, 0, G);
    RUN_(A("-np", "4", "-H2", "prog"), 4, 4, 2, 0, G);
    RUN_(A("-n", "4", "-H", "2", "-t", "1.5", "-g", "0", "prog"), 9, 4, 2, 1.5, 0);
    RUN_(A("--np=4", "--hosts=2", "--timeout=1.5", "--grace", "inf", "prog"), 6, 4, 2, 1.5,
         INFINITY);
    RUN_(A("-n", "2", "--no-kill", "prog"), 4, 2, 0, 0, INFINITY);
    /* unambiguous prefixes of long options */
    RUN_(A("--ho=2", "--time", "7", "--gr=1", "--np=3", "prog"), 6, 3, 2, 7, 1);
    RUN_(A("--no-k", "-n1", "prog"), 3, 1, 0, 0, INFINITY);
    /* the program ends the options: its own -n/--help are its arguments */
    RUN_(A("-n", "2", "prog", "-n", "9", "--help"), 3, 2, 0, 0, G);
    RUN_(A("-n", "2", "--", "--prog", "-x"), 4, 2, 0, 0, G);
    RUN_(A("-n", "2", "-", "x"), 3, 2, 0, 0, G);
    /* the last of a repeated option counts */
    RUN_(A("-n", "2", "-n", "3", "prog"), 5, 3, 0, 0, G);
    /* help and version win wherever they are before the program */
    expect(__LINE__, A("-n", "x", "--help"), SYMMRUN_ARGS_USAGE, 0, 0, 0, 0, 0, "-n wants");
    expect(__LINE__, A("--help", "-n", "x"), SYMMRUN_ARGS_HELP, 0, 0, 0, 0, 0, NULL);
    expect(__LINE__, A("-h"), SYMMRUN_ARGS_HELP, 0, 0, 0, 0, 0, NULL);
    expect(__LINE__, A("--version"), SYMMRUN_ARGS_VERSION, 0, 0, 0, 0, 0, NULL);
    expect(__LINE__, A("-V", "-n", "2", "prog"), SYMMRUN_ARGS_VERSION, 0, 0, 0, 0, 0, NULL);
    expect(__LINE__, A("--vers"), SYMMRUN_ARGS_VERSION, 0, 0, 0, 0, 0, NULL);
    /* errors name the option as written */
    BAD_(A("--bogus", "-n", "2", "prog"), "unknown or ambiguous option --bogus");
    BAD_(A("--bogus=3", "prog"), "unknown or ambiguous option --bogus");
    BAD_(A("--n", "2", "prog"), "unknown or ambiguous option --n");  /* --np or --no-kill */
    BAD_(A("-x", "prog"), "unknown option -x");
    BAD_(A("-n2x", "prog"), "-n wants a PE count");
    BAD_(A("-n"), "-n needs a value");
    BAD_(A("--np"), "--np needs a value");
    BAD_(A("-np"), "-np needs a value");
    BAD_(A("-n", "2", "--hosts"), "--hosts needs a value");
    BAD_(A("-n", "2", "--time"), "--time needs a value");
    BAD_(A("-n", "2", "--no-kill=1", "prog"), "--no-kill takes no value");
    BAD_(A("-n", "2", "--version=1"), "--version takes no value");
    BAD_(A("-n", "0", "prog"), "-n wants a PE count in 1..4096, not \"0\"");
    BAD_(A("-n", "+4", "prog"), "-n wants a PE count");
    BAD_(A("--np=", "prog"), "-n wants a PE count");
    BAD_(A("-n", "2", "--grace=", "prog"), "--grace wants seconds");
    BAD_(A("-n", "2", "-t", "0", "prog"), "--timeout wants a positive number");
    BAD_(A("-n", "2", "-H", "3", "prog"), "--hosts 3 is more than the 2 PEs");
    BAD_(A("-n", "2"), "missing the program to run");
    BAD_(A("-n", "2", "--"), "missing the program to run");
    BAD_(A("prog"), "missing -n N");
    /* SYMMRUN_GRACE is the default that --grace overrides */
    {
        char *argv[] = {"symmrun", "-n", "2", "prog", NULL};
        symmrun_opts o;
        char err[256];
        ASSERT_EQ(symmrun_parse_args(4, argv, "5", NULL, &o, err, sizeof err), SYMMRUN_ARGS_RUN);
        ASSERT_DBL_NEAR(o.grace_s, 5.0, 0);
        ASSERT_EQ(symmrun_parse_args(4, argv, "soon", NULL, &o, err, sizeof err),
                  SYMMRUN_ARGS_USAGE);
        ASSERT_TRUE(strstr(err, "SYMMRUN_GRACE") != NULL);
        char *argv2[] = {"symmrun", "-g", "2", "-n", "2", "prog", NULL};
        ASSERT_EQ(symmrun_parse_args(6, argv2, "5", NULL, &o, err, sizeof err), SYMMRUN_ARGS_RUN);
        ASSERT_DBL_NEAR(o.grace_s, 2.0, 0);
    }
    /* --bind: its values, SYMMRUN_BIND as its default, bad values named */
    {
        symmrun_opts o;
        char err[256];
        char *a1[] = {"symmrun", "-n", "2", "prog", NULL};
        ASSERT_EQ(symmrun_parse_args(4, a1, NULL, NULL, &o, err, sizeof err), SYMMRUN_ARGS_RUN);
        ASSERT_EQ(o.bind, SYMMRUN_BIND_AUTO);
        ASSERT_EQ(symmrun_parse_args(4, a1, NULL, "core", &o, err, sizeof err), SYMMRUN_ARGS_RUN);
        ASSERT_EQ(o.bind, SYMMRUN_BIND_CORE);
        ASSERT_EQ(symmrun_parse_args(4, a1, NULL, "tight", &o, err, sizeof err),
                  SYMMRUN_ARGS_USAGE);
        ASSERT_TRUE(strstr(err, "SYMMRUN_BIND wants auto, spread, core or none, not \"tight\"") !=
                    NULL);
        char *a2[] = {"symmrun", "--bind", "none", "-n", "2", "prog", NULL};
        ASSERT_EQ(symmrun_parse_args(6, a2, NULL, "core", &o, err, sizeof err), SYMMRUN_ARGS_RUN);
        ASSERT_EQ(o.bind, SYMMRUN_BIND_NONE);
        char *a3[] = {"symmrun", "--bind=spread", "-n", "2", "prog", NULL};
        ASSERT_EQ(symmrun_parse_args(5, a3, NULL, NULL, &o, err, sizeof err), SYMMRUN_ARGS_RUN);
        ASSERT_EQ(o.bind, SYMMRUN_BIND_SPREAD);
        ASSERT_EQ(o.prog, 4);
        char *a4[] = {"symmrun", "--bind", "cores", "-n", "2", "prog", NULL};
        ASSERT_EQ(symmrun_parse_args(6, a4, NULL, NULL, &o, err, sizeof err), SYMMRUN_ARGS_USAGE);
        ASSERT_TRUE(strstr(err, "--bind wants auto, spread, core or none, not \"cores\"") != NULL);
    }
    if (failures) {
        fprintf(stderr, "test_symmrun_args: %d failures\n", failures);
        return 1;
    }
    printf("test_symmrun_args: ok\n");
    return 0;
}
