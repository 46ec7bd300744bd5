// A write as a file holds it: where (match::WriteReq: variable, box, order) and its values. Writer
// sessions keep them, and a file is written from a header and its write records (persist=1).
#pragma once

#include <vector>

#include "match/match.hpp"

namespace dtf::model {

struct WriteRecord {
    match::WriteReq meta;
    // The elements of meta.box in row-major order, variable's type, native order; for a fill
    // (meta.fill: ncmpi_fill_var_rec, or a variable's fill at enddef, recorded by rank 0) one element,
    // the fill value, which stands for all of them.
    std::vector<char> data;
    const char *borrowed = nullptr; // buffer_data=0: the same, in the user's buffer (data is empty)
    bool packed = false;    // replay: only the plan's pieces were kept (in the data messages), not data
    bool persist_copy = false; // data: copied from the user's buffer at close for persist=1 (freed once written)
    const char *values() const { return borrowed ? borrowed : data.data(); }
};

} // namespace dtf::model
