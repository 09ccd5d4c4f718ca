/* The special functions (digamma, Bessel and Airy functions, the error
 * function's relatives, incomplete gamma, Hurwitz zeta, the orthogonal
 * polynomials) against double-precision references from SciPy (written
 * here, with the closed forms of the Chebyshev V and W kinds), at the points
 * where their methods change; PyTorch's values at poles, infinities and
 * NaN; float32 results rounded once from double; integers promoted to
 * float32. */
#include <math.h>
#include <stdlib.h>

#include "runtime/tensor.h"
#include "test.h"

#define MAX_POINTS 9

typedef struct unary_reference {
    porta_unary_op op;
    int count;
    double x[MAX_POINTS], want[MAX_POINTS];
} unary_reference;

typedef struct binary_reference {
    porta_binary_op op;
    int count;
    double a[MAX_POINTS], b[MAX_POINTS], want[MAX_POINTS];
} binary_reference;

static const unary_reference unary_references[] = {
    {PORTA_DIGAMMA, 7,
     {-2.5, -0.29999999999999999, 0.10000000000000001, 1, 7.5, 12, 1000},
     {1.1031566406452433, 2.1133097796353972, -10.423754940411076, -0.57721566490153287, 1.9467574842460866, 2.4426616799758123, 6.907255195648812}},
    {PORTA_I0, 6,
     {-3, 0.25, 5, 19.5, 21, 100},
     {4.8807925858650236, 1.015686141223608, 27.239871823604442, 26760525.339838758, 115513961.92215805, 1.0737517071310738e+42}},
    {PORTA_I0E, 6,
     {-3, 0.25, 5, 19.5, 21, 10000},
     {0.24300035416182536, 0.79101716213971951, 0.18354081260932834, 0.090939432095156467, 0.087589159654227852, 0.0039894726746047314}},
    {PORTA_I1, 6,
     {-3, 0.25, 5, 19.5, 21, 100},
     {-3.9533702174026093, 0.12597910894546785, 24.335642142450524, 26065069.264457162, 112729199.13777551, 1.0683693903381625e+42}},
    {PORTA_I1E, 6,
     {-3, 0.25, 5, 19.5, 21, 10000},
     {-0.19682671329730084, 0.098112628697368198, 0.16397226694454234, 0.088576086094314846, 0.085477596445229773, 0.0039892731959836622}},
    {PORTA_ERFCX, 7,
     {-5, -0.5, 0, 2, 9.5, 12, 100000},
     {144009798674.66104, 1.952360489182557, 1, 0.2553956763105058, 0.059064678352563897, 0.046854221014893761, 5.6418958351954685e-06}},
    {PORTA_LOG_NDTR, 7,
     {-40, -5, -1.5, -0.5, 0, 3, 10},
     {-804.60844201375392, -15.064998393988727, -2.7059444008238898, -1.1759117615936188, -0.69314718055994529, -0.0013508099647481925, -7.6198530241604696e-24}},
    {PORTA_NDTRI, 7,
     {1e-300, 1e-10, 0.01, 0.29999999999999999, 0.5, 0.90000000000000002, 0.99999899999999997},
     {-37.047096299361201, -6.3613409024040557, -2.3263478740408408, -0.52440051270804089, 0, 1.2815515655446004, 4.7534243088170873}},
    {PORTA_BESSEL_J0, 5,
     {-4, 0.5, 3, 8, 50},
     {-0.39714980986384729, 0.93846980724081297, -0.2600519549019335, 0.1716508071375539, 0.055812327669252086}},
    {PORTA_BESSEL_J1, 5,
     {-4, 0.5, 3, 8, 50},
     {0.066043328023549119, 0.24226845767487387, 0.33905895852593654, 0.2346363468539146, -0.097511828125175087}},
    {PORTA_BESSEL_Y0, 5,
     {0.10000000000000001, 0.5, 3, 8, 50},
     {-1.5342386513503667, -0.44451873350670662, 0.37685001001279061, 0.22352148938756622, -0.098064995470076924}},
    {PORTA_BESSEL_Y1, 5,
     {0.10000000000000001, 0.5, 3, 8, 50},
     {-6.4589510947020274, -1.4714723926702433, 0.32467442479180009, -0.15806046173124746, -0.056795668562014873}},
    {PORTA_MODIFIED_BESSEL_K0, 7,
     {9.9999999999999998e-13, 0.10000000000000001, 1, 4.5, 19.5, 21, 300},
     {27.74695263158695, 2.4270690247020164, 0.42102443824070823, 0.0063998572432339756, 9.5848240093128287e-10, 2.0617679699853179e-10, 3.7236948548891422e-132}},
    {PORTA_MODIFIED_BESSEL_K1, 7,
     {9.9999999999999998e-13, 0.10000000000000001, 1, 4.5, 19.5, 21, 300},
     {1000000000000, 9.853844780870606, 0.60190723019723458, 0.0070780949089680901, 9.8275877543638084e-10, 2.1102992233127965e-10, 3.7298958583323724e-132}},
    {PORTA_SCALED_MODIFIED_BESSEL_K0, 7,
     {9.9999999999999998e-13, 0.10000000000000001, 1, 4.5, 19.5, 21, 10000},
     {27.7469526316147, 2.6823261022628944, 1.1444630798068947, 0.57609678976878842, 0.28205028321567016, 0.27190920396701534, 0.012532984717699288}},
    {PORTA_SCALED_MODIFIED_BESSEL_K1, 7,
     {9.9999999999999998e-13, 0.10000000000000001, 1, 4.5, 19.5, 21, 10000},
     {1000000000001.0001, 10.890182683049698, 1.6361534862632581, 0.6371497987781356, 0.28919403285359757, 0.2783095820172623, 0.012533611351270504}},
    {PORTA_SPHERICAL_BESSEL_J0, 6,
     {-7, -0.29999999999999999, 0.001, 0.48999999999999999, 2, 100},
     {0.093855228388398437, 0.98506735553779856, 0.99999983333334164, 0.96046099626766945, 0.45464871341284085, -0.005063656411097588}},
    {PORTA_AIRY_AI, 9,
     {-20, -7.5, -6.5, -1, 0, 1.5, 2.5, 10, 50},
     {-0.17640612707798434, 0.32177571638064789, -0.23802030199711571, 0.53556088329235219, 0.35502805388781722, 0.07174949700810529, 0.015725923380470484, 1.1047532552898654e-10, 4.5849417240747882e-104}},
};
static const binary_reference binary_references[] = {
    {PORTA_IGAMMA, 6,
     {0.5, 2, 5, 10, 0.10000000000000001, 30},
     {0.20000000000000001, 1, 8, 3, 5, 31},
     {0.47291074313446196, 0.26424111765711528, 0.90036759951295409, 0.0011024881301154815, 0.99985606103415325, 0.5953478209656109}},
    {PORTA_IGAMMAC, 6,
     {0.5, 2, 5, 10, 0.10000000000000001, 30},
     {0.20000000000000001, 1, 8, 3, 5, 31},
     {0.52708925686553809, 0.73575888234288467, 0.099632400487045955, 0.99889751186988451, 0.00014393896584673387, 0.40465217903438916}},
    {PORTA_ZETA, 6,
     {2, 3, 1.5, 6, 2, 4},
     {1, 0.5, 10, 2.5, -1.5, 1000000000},
     {1.6449340668482266, 8.4143983221171581, 0.64866163194157034, 0.0048214098213931952, 9.3792466449891236, 3.333333338333333e-28}},
    {PORTA_CHEBYSHEV_T, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, 0.72799999999999998, -0.89309311999999863, 23.5, -362, 0.77631279764049899}},
    {PORTA_CHEBYSHEV_U, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, 0.055999999999999939, -1.8219622399999986, 54.999999999999993, -779.99999999999977, 1.0939471453810001}},
    {PORTA_SHIFTED_CHEBYSHEV_T, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, -48.095999999999989, 0.42197248000000065, 97, -47524.999999999993, 0.36048450764799844}},
    {PORTA_SHIFTED_CHEBYSHEV_U, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, -100.99200000000002, -0.78683903999999938, 209.00000000000003, -96029.999999999985, 0.26673807769599789}},
    {PORTA_HERMITE_H, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, 5.6560000000000006, -2182.9009382399995, -14.999999999999991, 15.99999999999986, -462152.58597715676}},
    {PORTA_HERMITE_HE, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, 1.7569999999999999, -111.86888078999999, -5.4375, 18, -216.24070615455275}},
    {PORTA_LAGUERRE_L, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, 3.8921666666666668, -0.0060183751584819622, -0.2890625, 47.933333333333323, -0.32469516091587275}},
    {PORTA_LEGENDRE_P, 6,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 1.5, -2, 0.45000000000000001},
     {0, 3, 8, 4, 5, 12},
     {1, 0.1925, -0.40968590351562523, 14.0859375, -185.75000000000003, 0.2155884797923622}},
    {PORTA_CHEBYSHEV_V, 5,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 0.45000000000000001, -0.20000000000000001},
     {0, 3, 8, 12, 1},
     {1, -0.90399999999999792, -0.78988544000000016, 0.38809303929100009, -1.3999999999999999}},
    {PORTA_CHEBYSHEV_W, 5,
     {0.29999999999999999, -0.69999999999999996, 0.90000000000000002, 0.45000000000000001, -0.20000000000000001},
     {0, 3, 8, 12, 1},
     {1, 1.0160000000000005, -2.8540390399999991, 1.7998012514710002, 0.59999999999999998}},
    {PORTA_SHIFTED_CHEBYSHEV_V, 5,
     {0.65000000000000002, 0.14999999999999999, 0.94999999999999996, 0.72499999999999998, 0.40000000000000002},
     {0, 3, 8, 12, 1},
     {1, -0.90399999999999792, -0.78988543999999883, 0.38809303929100009, -1.3999999999999999}},
    {PORTA_SHIFTED_CHEBYSHEV_W, 5,
     {0.65000000000000002, 0.14999999999999999, 0.94999999999999996, 0.72499999999999998, 0.40000000000000002},
     {0, 3, 8, 12, 1},
     {1, 1.0160000000000005, -2.8540390400000053, 1.7998012514710002, 0.59999999999999998}},
};

static porta_tensor *doubles(porta_dtype dtype, int64_t n, const double *values) {
    float narrow[MAX_POINTS];
    for (int64_t i = 0; i < n; i++) narrow[i] = (float)values[i];
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(
        test_cpu(), dtype, 1, &n, dtype == PORTA_F32 ? (const void *)narrow : values, &t);
    CHECK_MSG(!status, "making an input: %s", porta_status_message(status));
    porta_status_free(status);
    return t;
}

static void check_unary(const char *what, porta_unary_op op, porta_tensor *x, const double *want,
                        int64_t n, double rtol) {
    porta_tensor *out = NULL;
    porta_status *status = porta_unary(op, x, &out);
    CHECK_MSG(!status, "%s: %s", what, porta_status_message(status));
    porta_status_free(status);
    if (!out) return;
    double *got = test_to_doubles(out);
    test_close(what, got, want, n, rtol, 0);
    free(got);
    porta_tensor_release(out);
}

static void check_binary(const char *what, porta_binary_op op, porta_tensor *a, porta_tensor *b,
                         const double *want, int64_t n, double rtol) {
    porta_tensor *out = NULL;
    porta_status *status = porta_binary(op, a, b, &out);
    CHECK_MSG(!status, "%s: %s", what, porta_status_message(status));
    porta_status_free(status);
    if (!out) return;
    double *got = test_to_doubles(out);
    test_close(what, got, want, n, rtol, 0);
    free(got);
    porta_tensor_release(out);
}

/* Float64 within 1e-10 of the reference (libm's Bessel functions and the
 * series near the Airy function's switch points agree with SciPy's to a
 * few 1e-12); float32 within its rounding of the reference. */
TEST(test_special_unary_references) {
    for (size_t k = 0; k < sizeof unary_references / sizeof unary_references[0]; k++) {
        const unary_reference *r = &unary_references[k];
        const char *name = porta_unary_op_name(r->op);
        porta_tensor *x = doubles(PORTA_F64, r->count, r->x);
        check_unary(name, r->op, x, r->want, r->count, 1e-10);
        porta_tensor_release(x);
        /* float32: the same points rounded to float, then the function */
        float rounded[MAX_POINTS];
        double want32[MAX_POINTS];
        for (int i = 0; i < r->count; i++) rounded[i] = (float)r->x[i];
        int64_t n = r->count;
        porta_tensor *x64 = NULL, *x32 = NULL;
        double widened[MAX_POINTS];
        for (int i = 0; i < r->count; i++) widened[i] = rounded[i];
        CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &n, rounded, &x32));
        x64 = doubles(PORTA_F64, n, widened);
        porta_tensor *exact = NULL;
        CHECK_OK(porta_unary(r->op, x64, &exact));
        double *e = test_to_doubles(exact);
        for (int i = 0; i < r->count; i++) want32[i] = (float)e[i];
        check_unary(name, r->op, x32, want32, n, 0);
        free(e);
        porta_tensor_release(exact);
        porta_tensor_release(x64);
        porta_tensor_release(x32);
    }
}

TEST(test_special_binary_references) {
    for (size_t k = 0; k < sizeof binary_references / sizeof binary_references[0]; k++) {
        const binary_reference *r = &binary_references[k];
        porta_tensor *a = doubles(PORTA_F64, r->count, r->a), *b = doubles(PORTA_F64, r->count, r->b);
        check_binary(porta_binary_op_name(r->op), r->op, a, b, r->want, r->count, 1e-10);
        porta_tensor_release(a);
        porta_tensor_release(b);
    }
}

/* Poles, signs and infinities as PyTorch gives them. */
TEST(test_special_edge_values) {
    static const unary_reference unary_edges[] = {
        {PORTA_DIGAMMA, 6, {0.0, -0.0, -3.0, INFINITY, -INFINITY, NAN},
         {-INFINITY, INFINITY, NAN, INFINITY, NAN, NAN}},
        {PORTA_I0, 4, {0.0, INFINITY, -INFINITY, NAN}, {1, NAN, NAN, NAN}},
        {PORTA_I1, 3, {INFINITY, -INFINITY, 800.0}, {NAN, NAN, INFINITY}},
        {PORTA_I1E, 4, {-0.0, INFINITY, -INFINITY, NAN}, {0.0, 0, -0.0, NAN}},
        {PORTA_ERFCX, 4, {-30.0, INFINITY, NAN, 0.0}, {INFINITY, 0, NAN, 1}},
        {PORTA_NDTRI, 5, {0.0, 1.0, -0.5, 1.5, NAN}, {-INFINITY, INFINITY, NAN, NAN, NAN}},
        {PORTA_BESSEL_J0, 3, {INFINITY, -INFINITY, 0.0}, {NAN, NAN, 1}},
        {PORTA_BESSEL_Y0, 4, {0.0, -1.0, NAN, INFINITY}, {-INFINITY, NAN, NAN, NAN}},
        {PORTA_BESSEL_Y1, 3, {0.0, -1.0, NAN}, {-INFINITY, NAN, NAN}},
        {PORTA_MODIFIED_BESSEL_K0, 4, {0.0, -1.0, INFINITY, NAN}, {INFINITY, NAN, 0, NAN}},
        {PORTA_SCALED_MODIFIED_BESSEL_K1, 4, {0.0, -1.0, INFINITY, NAN}, {INFINITY, NAN, 0, NAN}},
        {PORTA_SPHERICAL_BESSEL_J0, 3, {0.0, INFINITY, -INFINITY}, {1, 0, 0}},
        {PORTA_AIRY_AI, 4, {INFINITY, -INFINITY, 110.0, NAN}, {NAN, NAN, 0, NAN}},
    };
    for (size_t k = 0; k < sizeof unary_edges / sizeof unary_edges[0]; k++) {
        const unary_reference *r = &unary_edges[k];
        porta_tensor *x = doubles(PORTA_F64, r->count, r->x);
        check_unary(porta_unary_op_name(r->op), r->op, x, r->want, r->count, 0);
        porta_tensor_release(x);
    }
    static const binary_reference binary_edges[] = {
        {PORTA_IGAMMA, 7, {-1, 1, 0, 0, 2, INFINITY, INFINITY}, {1, -1, 0, 3, 0, 2, INFINITY},
         {NAN, NAN, NAN, 1, 0, 0, NAN}},
        {PORTA_IGAMMAC, 5, {0, 2, INFINITY, 2, 0}, {3, 0, 2, INFINITY, 0},
         {0, 1, 1, 0, NAN}},
        {PORTA_ZETA, 5, {1, 0.5, 2, 2.5, NAN}, {2, 2, -3, -1.5, 1}, {INFINITY, NAN, INFINITY, NAN, NAN}},
        /* degrees truncate toward zero: -0.5 is degree 0 */
        {PORTA_CHEBYSHEV_T, 5, {1, -1, 0.5, 0.5, 0.5}, {7, 7, -1, NAN, -0.5}, {1, -1, 0, 0, 1}},
        {PORTA_CHEBYSHEV_U, 2, {1, -1}, {4, 3}, {5, -4}},
        {PORTA_LEGENDRE_P, 3, {-1, -1, 0.3}, {3, 4, -2}, {-1, 1, 0}},
        {PORTA_LAGUERRE_L, 2, {0, 2}, {9, 1}, {1, -1}},
    };
    for (size_t k = 0; k < sizeof binary_edges / sizeof binary_edges[0]; k++) {
        const binary_reference *r = &binary_edges[k];
        porta_tensor *a = doubles(PORTA_F64, r->count, r->a), *b = doubles(PORTA_F64, r->count, r->b);
        check_binary(porta_binary_op_name(r->op), r->op, a, b, r->want, r->count, 0);
        porta_tensor_release(a);
        porta_tensor_release(b);
    }
}

/* Integers and bool compute in float32, as torch.special's functions. */
TEST(test_special_integer_inputs_promote) {
    const int64_t values[3] = {1, 2, 5};
    int64_t n = 3;
    porta_tensor *x = NULL, *out = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, &n, values, &x));
    CHECK_OK(porta_unary(PORTA_DIGAMMA, x, &out));
    CHECK(out->dtype == PORTA_F32);
    double *got = test_to_doubles(out);
    const double want[3] = {(float)-0.57721566490153287, (float)0.42278433509846713,
                            (float)1.5061176684318003};
    test_close("digamma of int64", got, want, 3, 0, 0);
    free(got);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_binary(PORTA_HERMITE_H, x, x, &out));
    CHECK(out->dtype == PORTA_F32);
    got = test_to_doubles(out);
    const double hermite[3] = {2, 14, 80600 /* H_5(5) = 32*3125 - 160*125 + 120*5 */};
    test_close("hermite_polynomial_h of int64", got, hermite, 3, 0, 0);
    free(got);
    porta_tensor_release(out);
    porta_tensor_release(x);
}
