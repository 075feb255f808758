// Tucker head generation: per role ρ, W_ρ (NH, hs·C) = U (NH, R) · G_ρ (R, hs·C).
// W_ρ is exactly rows [ρ·C, (ρ+1)·C) of the QKV weight, so one GEMM per role.
#include "model/attention.h"
#include "model/matmul.h"

void tucker_generate_forward(float *wqkv, const float *core, const float *factor, int NH, int R,
                             int hs, int C) {
    const long role = (long)hs * C;  // columns of W_ρ and G_ρ
    for (int rho = 0; rho < 3; rho++)
        gemm(0, 0, NH, (int)role, R, 1.0f, factor, R, core + rho * R * role, (int)role, 0.0f,
             wqkv + rho * NH * role, (int)role);
}

void tucker_generate_backward(float *dcore, float *dfactor, const float *dwqkv, const float *core,
                              const float *factor, int NH, int R, int hs, int C) {
    const long role = (long)hs * C;
    for (int rho = 0; rho < 3; rho++) {
        const float *dW = dwqkv + rho * NH * role, *G = core + rho * R * role;
        gemm(1, 0, R, (int)role, NH, 1.0f, factor, R, dW, (int)role, 1.0f, dcore + rho * R * role, (int)role);
        gemm(0, 1, NH, R, (int)role, 1.0f, dW, (int)role, G, (int)role, 1.0f, dfactor, R);
    }
}
