// CAME's kernel with AVX2 and FMA (came_kernel.h; this file is compiled with -mavx2 -mfma and
// called only where the CPU has both).
#define UPGUARD_OPTIM_ISA avx2
#include "optim/came_kernel.h"
