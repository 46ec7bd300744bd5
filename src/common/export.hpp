// Marks a function as part of libdtf's exported C ABI (everything else is hidden).
#pragma once

#ifdef __cplusplus
#define DTF_API extern "C" __attribute__((visibility("default")))
#else
#define DTF_API __attribute__((visibility("default")))
#endif
