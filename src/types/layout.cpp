// User buffer layouts: MPI datatype stage (MPI_Pack/MPI_Unpack on MPI_COMM_SELF, as PnetCDF does)
// and imap stage (strided element copies).
#include "types/layout.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <utility>

#include "types/convert.hpp"

namespace dtf::types {
namespace {

// Fortran (and alias) datatypes PnetCDF's flexible API accepts, with their C equivalents.
struct Alias {
    MPI_Datatype mpi;
    nc_type memtype;
};
const Alias *aliases(size_t *n) {
    static const Alias table[] = {
        {MPI_LONG_LONG, NC_INT64},   {MPI_CHARACTER, NC_CHAR},   {MPI_INTEGER1, NC_BYTE},
        {MPI_INTEGER2, NC_SHORT},    {MPI_INTEGER, NC_INT},      {MPI_INTEGER4, NC_INT},
        {MPI_INTEGER8, NC_INT64},    {MPI_REAL, NC_FLOAT},       {MPI_REAL4, NC_FLOAT},
        {MPI_REAL8, NC_DOUBLE},      {MPI_DOUBLE_PRECISION, NC_DOUBLE},
    };
    *n = sizeof table / sizeof table[0];
    return table;
}

// The twelve predefined C types of the typed API (the only ones allowed with bufcount -1).
nc_type c_memtype(MPI_Datatype t) {
#define DTF_X(id, ctype, suffix, name, mpitype, ...)                                                 \
    if (t == mpitype)                                                                                \
        return id;
    DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    return NC_NAT;
}

bool is_named(MPI_Datatype t) {
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    return comb == MPI_COMBINER_NAMED;
}

// Calls f(child) for each datatype a derived type is built from; returns false for the
// Fortran-parameterized combiners (F90_REAL ...), which PnetCDF does not support.
template <class F> bool for_each_child(MPI_Datatype t, F f) {
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
        comb == MPI_COMBINER_F90_INTEGER)
        return false;
    std::vector<int> ints(ni + 1);
    std::vector<MPI_Aint> addrs(na + 1);
    std::vector<MPI_Datatype> types(nd + 1);
    MPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data());
    for (int i = 0; i < nd; ++i) {
        f(types[i], comb);
        if (!is_named(types[i])) // get_contents returns new handles for derived children
            MPI_Type_free(&types[i]);
    }
    return true;
}

// The one primitive type buftype is made of: NC_NOERR, NC_EUNSPTETYPE or NC_EMULTITYPES.
int element_type(MPI_Datatype t, MPI_Datatype *elem) {
    if (is_named(t)) {
        if (*elem == MPI_DATATYPE_NULL)
            *elem = t;
        return *elem == t ? NC_NOERR : NC_EMULTITYPES;
    }
    int rc = NC_NOERR;
    const bool ok = for_each_child(t, [&](MPI_Datatype child, int) {
        if (rc == NC_NOERR)
            rc = element_type(child, elem);
    });
    return ok ? rc : NC_EUNSPTETYPE;
}

int64_t size_of(MPI_Datatype t) {
    int size = 0;
    MPI_Type_size(t, &size);
    return size;
}

// `bytes` at byte `offset` appended to runs `out`, merged with the last run where adjacent.
void append_run(std::vector<ByteRun> &out, int64_t offset, int64_t bytes) {
    if (!out.empty() && out.back().offset + out.back().bytes == offset) out.back().bytes += bytes;
    else if (bytes > 0) out.push_back(ByteRun{offset, bytes});
}

// A subarray type's geometry (the ints of MPI_Type_get_contents), in elements of its old type: its
// dimensions slowest first (subsizes, and the strides of the whole array), the offset of its first
// element, and the elements of the whole array (its extent).
struct Subarray {
    std::vector<int64_t> count, stride;
    int64_t base = 0, whole = 1;
};
Subarray subarray_of(const int *ints) {
    const int n = ints[0];
    const int *sizes = &ints[1], *subsizes = &ints[1 + n], *starts = &ints[1 + 2 * n];
    const bool c_order = ints[1 + 3 * n] == MPI_ORDER_C;
    Subarray g;
    g.count.resize(static_cast<size_t>(n));
    g.stride.resize(static_cast<size_t>(n));
    for (int k = n - 1; k >= 0; --k) { // k counts dimensions slowest first
        const int d = c_order ? k : n - 1 - k;
        g.count[static_cast<size_t>(k)] = subsizes[d], g.stride[static_cast<size_t>(k)] = g.whole;
        g.base += starts[d] * g.whole, g.whole *= sizes[d];
    }
    return g;
}

// The rows of a subarray type's elements (the ints of MPI_Type_get_contents) in the array's order:
// f(offset of the row's first element in the array, elements in a row).
template <class F> void subarray_rows(const int *ints, F f) {
    const Subarray g = subarray_of(ints);
    const std::vector<int64_t> &sub = g.count, &stride = g.stride;
    const int n = static_cast<int>(sub.size());
    if (n == 0 || std::find(sub.begin(), sub.end(), 0) != sub.end()) return;
    std::vector<int64_t> idx(sub.size(), 0);
    int64_t off = g.base;
    for (int k = 0;; off += stride[k]) {
        f(off, sub[n - 1]);
        for (k = n - 2; k >= 0 && ++idx[k] == sub[k]; --k) idx[k] = 0, off -= stride[k] * (sub[k] - 1);
        if (k < 0) return;
    }
}

// The runs of datatype `t` placed at byte `base` (flatten()). A block of elements of a predefined
// type is one run, whatever its length.
int flatten_into(MPI_Datatype t, int64_t base, std::vector<ByteRun> &out) {
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED) {
        append_run(out, base, size_of(t));
        return NC_NOERR;
    }
    std::vector<int> ints(static_cast<size_t>(ni) + 1);
    std::vector<MPI_Aint> addrs(static_cast<size_t>(na) + 1);
    std::vector<MPI_Datatype> types(static_cast<size_t>(nd) + 1);
    MPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data());
    const MPI_Datatype old = types[0];
    MPI_Aint lb = 0, ext = 0;
    if (nd > 0) MPI_Type_get_extent(old, &lb, &ext);
    const bool dense_old = nd > 0 && is_named(old) && size_of(old) == ext; // a block of them is one run
    int rc = NC_NOERR;
    auto at = [&](MPI_Datatype child, int64_t offset) {
        if (rc == NC_NOERR) rc = flatten_into(child, base + offset, out);
    };
    auto block = [&](int64_t offset, int64_t n) { // n copies of old from offset, one extent apart
        if (dense_old) return append_run(out, base + offset, n * ext);
        for (int64_t k = 0; k < n; ++k) at(old, offset + k * ext);
    };
    switch (comb) {
    case MPI_COMBINER_DUP: case MPI_COMBINER_RESIZED: at(old, 0); break;
    case MPI_COMBINER_CONTIGUOUS: block(0, ints[0]); break;
    case MPI_COMBINER_VECTOR:
        for (int i = 0; i < ints[0]; ++i) block(int64_t{i} * ints[2] * ext, ints[1]);
        break;
    case MPI_COMBINER_HVECTOR:
        for (int i = 0; i < ints[0]; ++i) block(int64_t{i} * addrs[0], ints[1]);
        break;
    case MPI_COMBINER_INDEXED:
        for (int i = 0; i < ints[0]; ++i)
            block(int64_t{ints[static_cast<size_t>(1 + ints[0] + i)]} * ext, ints[static_cast<size_t>(1 + i)]);
        break;
    case MPI_COMBINER_HINDEXED:
        for (int i = 0; i < ints[0]; ++i) block(addrs[static_cast<size_t>(i)], ints[static_cast<size_t>(1 + i)]);
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        for (int i = 0; i < ints[0]; ++i) block(int64_t{ints[static_cast<size_t>(2 + i)]} * ext, ints[1]);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        for (int i = 0; i < ints[0]; ++i) block(addrs[static_cast<size_t>(i)], ints[1]);
        break;
    case MPI_COMBINER_STRUCT:
        for (int i = 0; i < ints[0]; ++i) {
            MPI_Aint clb = 0, cext = 0;
            MPI_Type_get_extent(types[static_cast<size_t>(i)], &clb, &cext);
            for (int k = 0; k < ints[static_cast<size_t>(1 + i)]; ++k)
                at(types[static_cast<size_t>(i)], addrs[static_cast<size_t>(i)] + k * cext);
        }
        break;
    case MPI_COMBINER_SUBARRAY: // a sub-block of an array of `old`, in the array's order, row by row
        subarray_rows(ints.data(), [&](int64_t offset, int64_t n) { block(offset * ext, n); });
        break;
    default: rc = NC_EUNSPTETYPE; break;
    }
    for (int i = 0; i < nd; ++i)
        if (!is_named(types[static_cast<size_t>(i)])) MPI_Type_free(&types[static_cast<size_t>(i)]);
    return rc;
}

// A datatype whose packed form is its memory image (lb 0, no holes, in order): predefined types and
// contiguous/dup chains of them. Others go through MPI_Pack (correct for any type, just slower).
bool is_dense_type(MPI_Datatype t) {
    if (is_named(t))
        return true;
    bool dense = true;
    const bool ok = for_each_child(t, [&](MPI_Datatype child, int comb) {
        dense = dense && (comb == MPI_COMBINER_DUP || comb == MPI_COMBINER_CONTIGUOUS) &&
                is_dense_type(child);
    });
    return ok && dense;
}

// Stage 1. MPI_Pack takes int sizes: pack at most INT_MAX bytes per call.
int pack_or_unpack(const MemLayout &l, bool pack, const char *in, char *out) {
    MPI_Count tsize;
    MPI_Aint lb, extent;
    MPI_Type_size_x(l.buftype, &tsize);
    MPI_Type_get_extent(l.buftype, &lb, &extent);
    if (tsize > INT_MAX)
        return NC_EINTOVERFLOW;
    if (tsize == 0)
        return NC_NOERR;
    const MPI_Offset per = INT_MAX / tsize;
    for (MPI_Offset i = 0; i < l.bufcount; i += per) {
        const int k = static_cast<int>(std::min<MPI_Offset>(per, l.bufcount - i));
        int pos = 0, err;
        if (pack)
            err = MPI_Pack(in + i * extent, k, l.buftype, out + i * tsize, k * int(tsize), &pos,
                           MPI_COMM_SELF);
        else
            err = MPI_Unpack(in + i * tsize, k * int(tsize), &pos, out + i * extent, k, l.buftype,
                             MPI_COMM_SELF);
        if (err != MPI_SUCCESS)
            return NC_EINTERNAL;
    }
    return NC_NOERR;
}

// Stage 2: for each innermost row of the request, f(element offset in the strided buffer, index of
// the row's first element in the dense array).
template <class F> void for_each_row(const MemLayout &l, F f) {
    const size_t nd = l.count.size();
    const MPI_Offset len = l.count[nd - 1], rows = l.nelems / len;
    std::vector<MPI_Offset> idx(nd, 0);
    MPI_Offset off = 0;
    for (MPI_Offset r = 0; r < rows; ++r) {
        f(off, r * len);
        for (size_t d = nd - 1; d-- > 0;) { // odometer over the outer dimensions
            if (++idx[d] < l.count[d]) {
                off += l.imap[d];
                break;
            }
            off -= l.imap[d] * (l.count[d] - 1);
            idx[d] = 0;
        }
    }
}

template <size_t S> void copy_elems(char *dst, ptrdiff_t dstep, const char *src, ptrdiff_t sstep, MPI_Offset n) {
    for (MPI_Offset i = 0; i < n; ++i, dst += dstep, src += sstep)
        std::memcpy(dst, src, S);
}

void copy_strided(size_t es, char *dst, ptrdiff_t dstep, const char *src, ptrdiff_t sstep, MPI_Offset n) {
    switch (es) {
    case 1: return copy_elems<1>(dst, dstep, src, sstep, n);
    case 2: return copy_elems<2>(dst, dstep, src, sstep, n);
    case 4: return copy_elems<4>(dst, dstep, src, sstep, n);
    case 8: return copy_elems<8>(dst, dstep, src, sstep, n);
    default:
        for (MPI_Offset i = 0; i < n; ++i, dst += dstep, src += sstep)
            std::memcpy(dst, src, es);
    }
}

// imap-addressed buffer -> dense array, and back.
void imap_gather(const MemLayout &l, const char *strided, char *dense) {
    const ptrdiff_t es = static_cast<ptrdiff_t>(l.elsize), step = l.imap.back() * es;
    for_each_row(l, [&](MPI_Offset off, MPI_Offset first) {
        copy_strided(l.elsize, dense + first * es, es, strided + off * es, step, l.count.back());
    });
}
void imap_scatter(const MemLayout &l, const char *dense, char *strided) {
    const ptrdiff_t es = static_cast<ptrdiff_t>(l.elsize), step = l.imap.back() * es;
    for_each_row(l, [&](MPI_Offset off, MPI_Offset first) {
        copy_strided(l.elsize, strided + off * es, step, dense + first * es, es, l.count.back());
    });
}

int gather_into(const MemLayout &l, const void *user_buf, char *out) {
    const char *user = static_cast<const char *>(user_buf);
    if (l.contiguous()) {
        if (l.dense_bytes())
            std::memcpy(out, user, l.dense_bytes());
        return NC_NOERR;
    }
    if (l.imap.empty())
        return pack_or_unpack(l, true, user, out);
    std::vector<char> lbuf;
    if (l.buftype != MPI_DATATYPE_NULL) {
        lbuf.resize(l.dense_bytes());
        if (int rc = pack_or_unpack(l, true, user, lbuf.data()))
            return rc;
        user = lbuf.data();
    }
    imap_gather(l, user, out);
    return NC_NOERR;
}

// Dimension (count, stride) appended to m as its fastest so far, merged into the one before it where
// the two are one (adjacent rows); dimensions of count 1 add nothing.
void add_dim(StridedMap &m, int64_t count, int64_t stride) {
    if (count == 1) return;
    if (!m.count.empty() && m.stride.back() == stride * count) {
        m.count.back() *= count;
        m.stride.back() = stride;
        return;
    }
    m.count.push_back(count);
    m.stride.push_back(stride);
}

// The dimensions of `bufcount` buftypes `t` one extent apart when t is (a dup of) a subarray of
// elements of `elsize` bytes; false otherwise.
bool subarray_dims(MPI_Datatype t, size_t elsize, MPI_Offset bufcount, StridedMap &m) {
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED) return false;
    std::vector<int> ints(static_cast<size_t>(ni) + 1);
    std::vector<MPI_Aint> addrs(static_cast<size_t>(na) + 1);
    std::vector<MPI_Datatype> types(static_cast<size_t>(nd) + 1);
    MPI_Type_get_contents(t, ni, na, nd, ints.data(), addrs.data(), types.data());
    bool ok = false;
    MPI_Aint lb = 0, ext = 0;
    if (nd > 0) MPI_Type_get_extent(types[0], &lb, &ext);
    if (comb == MPI_COMBINER_DUP) {
        ok = subarray_dims(types[0], elsize, bufcount, m);
    } else if (comb == MPI_COMBINER_SUBARRAY && is_named(types[0]) && size_of(types[0]) == ext &&
               static_cast<size_t>(ext) == elsize) {
        const Subarray g = subarray_of(ints.data());
        add_dim(m, bufcount, g.whole); // (a subarray's extent is its whole array)
        for (size_t k = 0; k < g.count.size(); ++k) add_dim(m, g.count[k], g.stride[k]);
        m.base = g.base;
        ok = true;
    }
    for (int i = 0; i < nd; ++i)
        if (!is_named(types[static_cast<size_t>(i)])) MPI_Type_free(&types[static_cast<size_t>(i)]);
    return ok;
}

// Whether an imap puts every element of the request in a place of its own.
bool injective(const std::vector<MPI_Offset> &count, const std::vector<MPI_Offset> &imap) {
    std::vector<std::pair<int64_t, int64_t>> dims; // (|stride|, count), fastest first
    for (size_t d = 0; d < count.size(); ++d) dims.emplace_back(imap[d] < 0 ? -imap[d] : imap[d], count[d]);
    std::sort(dims.begin(), dims.end());
    int64_t reach = 0; // the farthest offset the faster dimensions reach
    for (const auto &[stride, n] : dims) {
        if (stride <= reach) return false;
        reach += stride * (n - 1);
    }
    return true;
}

} // namespace

StridedMap strided_map(const MemLayout &l) {
    StridedMap m;
    if (l.nelems <= 0) return m;
    if (l.buftype != MPI_DATATYPE_NULL && l.imap.empty()) {
        if (!subarray_dims(l.buftype, l.elsize, l.bufcount, m)) return StridedMap{};
    } else if (l.buftype == MPI_DATATYPE_NULL && !l.imap.empty() && injective(l.count, l.imap)) {
        for (size_t d = 0; d < l.count.size(); ++d) add_dim(m, l.count[d], l.imap[d]);
    } else {
        return m;
    }
    if (m.count.empty()) { // one element
        m.count.push_back(1);
        m.stride.push_back(1);
    }
    return m;
}

void place(const StridedMap &m, size_t es, int64_t first, int64_t n, const char *src, void *user_buf) {
    char *user = static_cast<char *>(user_buf);
    const size_t nd = m.count.size();
    const int64_t len = m.count[nd - 1], step = m.stride[nd - 1];
    int64_t row = first / len, col = first % len;
    while (n > 0) {
        int64_t off = m.base;
        for (size_t d = nd - 1, r = static_cast<size_t>(row); d-- > 0; r /= static_cast<size_t>(m.count[d]))
            off += static_cast<int64_t>(r % static_cast<size_t>(m.count[d])) * m.stride[d];
        const int64_t k = std::min(n, len - col);
        char *dst = user + (off + col * step) * static_cast<int64_t>(es);
        if (step == 1) std::memcpy(dst, src, static_cast<size_t>(k) * es);
        else copy_strided(es, dst, step * static_cast<ptrdiff_t>(es), src, static_cast<ptrdiff_t>(es), k);
        src += static_cast<size_t>(k) * es;
        n -= k;
        ++row;
        col = 0;
    }
}

int flatten(MPI_Datatype filetype, std::vector<ByteRun> *runs, MPI_Datatype *elem) {
    *elem = MPI_DATATYPE_NULL;
    if (int rc = element_type(filetype, elem)) return rc;
    runs->clear();
    return flatten_into(filetype, 0, *runs);
}

nc_type memtype_of_mpi(MPI_Datatype t, int *err) noexcept {
    if (err)
        *err = NC_NOERR;
    if (t == MPI_DATATYPE_NULL) {
        if (err)
            *err = NC_EUNSPTETYPE;
        return NC_NAT;
    }
    if (nc_type m = c_memtype(t))
        return m;
    size_t n;
    const Alias *a = aliases(&n);
    for (size_t i = 0; i < n; ++i)
        if (a[i].mpi == t)
            return a[i].memtype;
    if (err)
        *err = (t == MPI_BYTE || t == MPI_UNSIGNED_LONG) ? NC_EBADTYPE : NC_EUNSPTETYPE;
    return NC_NAT;
}

void MemLayout::release() noexcept {
    if (buftype == MPI_DATATYPE_NULL) return; // (most layouts: no type, and no need to ask MPI)
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Type_free(&buftype);
    buftype = MPI_DATATYPE_NULL;
}

MemLayout::MemLayout(MemLayout &&o) noexcept { *this = std::move(o); }

MemLayout &MemLayout::operator=(MemLayout &&o) noexcept {
    if (this != &o) {
        release();
        memtype = o.memtype;
        elsize = o.elsize;
        nelems = o.nelems;
        buftype = std::exchange(o.buftype, MPI_DATATYPE_NULL);
        bufcount = o.bufcount;
        count = std::move(o.count);
        imap = std::move(o.imap);
    }
    return *this;
}

MemLayout::~MemLayout() { release(); }

int describe_typed(nc_type memtype, int64_t nelems, MemLayout *out) {
    *out = MemLayout();
    if (!is_memtype(memtype))
        return NC_EBADTYPE;
    if (nelems < 0)
        return NC_ENEGATIVECNT;
    out->memtype = memtype;
    out->elsize = type_size(memtype);
    out->nelems = nelems;
    return NC_NOERR;
}

int describe_flexible(MPI_Offset bufcount, MPI_Datatype buftype, nc_type xtype, int64_t nelems,
                      MemLayout *out) {
    *out = MemLayout();
    if (buftype == MPI_DATATYPE_NULL) // the buffer holds the variable's own type; bufcount ignored
        return is_external(xtype) ? describe_typed(xtype, nelems, out) : NC_EBADTYPE;
    if (bufcount == -1) {
        const nc_type m = c_memtype(buftype);
        return m == NC_NAT ? NC_EBADTYPE : describe_typed(m, nelems, out);
    }
    MPI_Datatype elem = MPI_DATATYPE_NULL;
    if (int rc = element_type(buftype, &elem))
        return rc;
    int err;
    const nc_type m = memtype_of_mpi(elem, &err);
    if (m == NC_NAT && err == NC_EUNSPTETYPE)
        return err;
    MPI_Count tsize;
    int esize;
    MPI_Type_size_x(buftype, &tsize);
    MPI_Type_size(elem, &esize);
    if (m != NC_NAT && static_cast<size_t>(esize) != type_size(m))
        return NC_EUNSPTETYPE; // a Fortran type of unusual size
    long long have;
    if (bufcount < 0 || esize == 0 || __builtin_mul_overflow(bufcount, tsize / esize, &have) || have != nelems)
        return NC_EIOMISMATCH;
    if (m == NC_NAT)
        return err; // MPI_BYTE, MPI_UNSIGNED_LONG: NC_EBADTYPE after the count check, as PnetCDF
    if (int rc = describe_typed(m, nelems, out))
        return rc;
    if (!is_dense_type(buftype)) {
        MPI_Type_dup(buftype, &out->buftype);
        out->bufcount = bufcount;
    }
    return NC_NOERR;
}

int apply_imap(MemLayout *l, int ndims, const MPI_Offset *count, const MPI_Offset *imap) {
    if (!imap)
        return NC_NOERR;
    int64_t n = 1;
    for (int d = 0; d < ndims; ++d) {
        if (count[d] < 0)
            return NC_ENEGATIVECNT;
        n *= count[d];
    }
    if (n != l->nelems)
        return NC_EINVAL;
    if (n == 0)
        return NC_NOERR;
    // Keep dimensions with count > 1, merging a dimension into the next when they are adjacent.
    std::vector<MPI_Offset> c, m;
    for (int d = 0; d < ndims; ++d) {
        if (count[d] == 1)
            continue;
        if (!c.empty() && m.back() == imap[d] * count[d]) {
            c.back() *= count[d];
            m.back() = imap[d];
        } else {
            c.push_back(count[d]);
            m.push_back(imap[d]);
        }
    }
    if (c.empty() || (c.size() == 1 && m[0] == 1))
        return NC_NOERR; // row-major dense: nothing to do
    if (l->buftype != MPI_DATATYPE_NULL) { // offsets index the nelems packed elements
        MPI_Offset lo = 0, hi = 0;
        for (size_t d = 0; d < c.size(); ++d)
            (m[d] < 0 ? lo : hi) += (c[d] - 1) * m[d];
        if (lo < 0 || hi >= l->nelems)
            return NC_EINVAL;
    }
    l->count = std::move(c);
    l->imap = std::move(m);
    return NC_NOERR;
}

int gather(const MemLayout &l, const void *user_buf, std::vector<char> &dense) {
    dense.resize(l.dense_bytes());
    return gather_into(l, user_buf, dense.data());
}

const char *gather_view(const MemLayout &l, const void *user_buf, std::vector<char> &scratch, int *err) {
    int rc = NC_NOERR;
    const char *p = static_cast<const char *>(user_buf);
    if (!l.contiguous()) {
        rc = gather(l, user_buf, scratch);
        p = rc ? nullptr : scratch.data();
    }
    if (err)
        *err = rc;
    return p;
}

int scatter(const MemLayout &l, const char *dense, void *user_buf) {
    char *user = static_cast<char *>(user_buf);
    if (l.contiguous()) {
        if (l.dense_bytes())
            std::memcpy(user, dense, l.dense_bytes());
        return NC_NOERR;
    }
    if (l.buftype == MPI_DATATYPE_NULL) {
        imap_scatter(l, dense, user);
        return NC_NOERR;
    }
    if (l.imap.empty())
        return pack_or_unpack(l, false, dense, user);
    // Both stages. Start lbuf from the user's values, so that elements an imap with repeated
    // offsets never writes come back unchanged.
    std::vector<char> lbuf(l.dense_bytes());
    if (int rc = pack_or_unpack(l, true, user, lbuf.data()))
        return rc;
    imap_scatter(l, dense, lbuf.data());
    return pack_or_unpack(l, false, lbuf.data(), user);
}

} // namespace dtf::types
