// The dispatch's argument vector (hook.h: args[i] points to the i-th parameter of the ncmpi_* call)
// seen from C++: arg<T>(args, i) is that parameter, of type T.
#pragma once

namespace dtf::pnc {

template <class T> T &arg(void **args, int i) { return *static_cast<T *>(args[i]); }

} // namespace dtf::pnc
