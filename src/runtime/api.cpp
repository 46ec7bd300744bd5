// TEMPORARY stub so the tree builds while the runtime is written.
#include "dtf.h"
#include "pnc/hook.h"
#include "common/error.hpp"
extern "C" {
__attribute__((visibility("default"))) int dtf_init(const char *, const char *) { return 0; }
__attribute__((visibility("default"))) int dtf_transfer(const char *, int) { return 0; }
__attribute__((visibility("default"))) int dtf_finalize(void) { return 0; }
__attribute__((visibility("default"))) const char *dtf_strerror(int c) { const char *m = dtf::error_message(c); return m ? m : "unknown"; }
__attribute__((visibility("default"))) const char *dtf_errmsg(void) { return dtf::last_error(); }
int dtf_pnc_active_ = 0;
unsigned char dtf_pnc_owned_[DTF_PNC_OWNED_MAX];
int dtf_pnc_path_call(int, void **) { return DTF_PNC_PASS; }
int dtf_pnc_ncid_call(int, int, void **) { return DTF_PNC_PASS; }
}
