// chance.h: the head correlation of independent Gaussian weights of a layer's shape
// (chance.c says how each is computed), shown beside a measured Correlation so that a
// number at chance reads as chance.
#ifndef ATTN_CHANCE_H
#define ATTN_CHANCE_H

// E|cos| between two rows of the scored tensor's mode-0 unfolding when every weight the
// view reads is independent N(0, 1): exact for rows of independent entries (the
// parameter view), a fixed-seed Monte Carlo mean for the function-level tensors
// (standard error at most 5 %).
double correlation_chance_of_rows(double n);         // rows of length n
double circuits_chance(int d_k, int d_model);        // softmax heads' (B_h, C_h)
double mixing_kernel_chance(int r, int d_model);     // Grassmann output features' forms

#endif
