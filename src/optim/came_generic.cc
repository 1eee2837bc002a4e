// CAME's kernel as the compiler targets by default (came_kernel.h).
#define UPGUARD_OPTIM_ISA generic
#include "optim/came_kernel.h"
