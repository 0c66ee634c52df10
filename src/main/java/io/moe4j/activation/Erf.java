package io.moe4j.activation;

/** The error function to double precision (Java has none): W. J. Cody's rational approximations. */
final class Erf {
    private Erf() {
    }

    static double erf(double x) {
        double ax = Math.abs(x);
        if (ax < 0.5) {
            // erf(x) = x · P(x²)/Q(x²) near zero.
            double t = x * x;
            double p = (((1.85777706184603153e-1 * t + 3.16112374387056560e0) * t + 1.13864154151050156e2) * t
                    + 3.77485237685302021e2) * t + 3.20937758913846947e3;
            double q = (((t + 2.36012909523441209e1) * t + 2.44024637934444173e2) * t + 1.28261652607737228e3) * t
                    + 2.84423683343917062e3;
            return x * p / q;
        }
        return Math.copySign(1.0 - erfc(ax), x);
    }

    /** erfc for x ≥ 0.5. */
    private static double erfc(double x) {
        if (x < 4.0) {
            double p = (((((((2.15311535474403846e-8 * x + 5.64188496988670089e-1) * x + 8.88314979438837594e0) * x
                    + 6.61191906371416295e1) * x + 2.98635138197400131e2) * x + 8.81952221241769090e2) * x
                    + 1.71204761263407058e3) * x + 2.05107837782607147e3) * x + 1.23033935479799725e3;
            double q = (((((((x + 1.57449261107098347e1) * x + 1.17693950891312499e2) * x + 5.37181101862009858e2) * x
                    + 1.62138957456669019e3) * x + 3.29079923573345963e3) * x + 4.36261909014324716e3) * x
                    + 3.43936767414372164e3) * x + 1.23033935480374942e3;
            return Math.exp(-x * x) * p / q;
        }
        if (x > 27.0) {
            return 0.0;
        }
        double z = 1.0 / (x * x);
        double p = ((((1.63153871373020978e-2 * z + 3.05326634961232344e-1) * z + 3.60344899949804439e-1) * z
                + 1.25781726111229246e-1) * z + 1.60837851487422766e-2) * z + 6.58749161529837803e-4;
        double q = ((((z + 2.56852019228982242e0) * z + 1.87295284992346725e0) * z + 5.27905102951428412e-1) * z
                + 6.05183413124413191e-2) * z + 2.33520497626869185e-3;
        double r = (1.0 / Math.sqrt(Math.PI) - z * p / q) / x;
        return Math.exp(-x * x) * r;
    }
}
