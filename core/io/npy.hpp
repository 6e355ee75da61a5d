// NumPy .npy files (format versions 1.0, 2.0, 3.0) read from and written to byte strings.
// Reading is the untrusted boundary: every malformed file gives an Error
// that names the file and the values involved, the parser never reads outside the buffer and
// never allocates more than the file's own size justifies. Writing produces exactly what
// NumPy 1.24's np.save writes for a C-order float32 array.
#pragma once

#include <string>
#include <string_view>

#include "util/result.hpp"
#include "attention/tensor.hpp"

namespace mhascope {

// Which non-finite values a caller accepts. Inputs, weights and masks take FiniteOnly (NaN or
// inf there is a loading error, never silently zeroed); a dumped masked_scores stage legitimately
// holds -inf (blocked cells), read back with AllowMinusInfinity. NaN and +inf are refused by both.
// Any keeps every value as it is: for tensors that are shown as they were made (a learner's code's
// tensors, where a NaN is the finding, not a broken file).
enum class NpyValues { FiniteOnly, AllowMinusInfinity, Any };

// Parses a whole .npy file held in `bytes`. `what` names the tensor or file in every message,
// e.g. "--query q.npy". Read dtypes: <f4 >f4 <f8 >f8 <f2 >f2 (floats; f8 values outside the
// float32 range are an error), |b1, |u1 |i1, <i2 <u2 <i4 <u4 <i8 <u8 and their big-endian
// variants (converted to float, meant for masks). NaN or ±Inf in float data is an error with
// the counts — never silently zeroed — except what `values` allows. Shape () is a 0-d array of
// one element. The returned Tensor has shape and data; its axes are left empty for the caller.
Result<Tensor> parseNpy(std::string_view bytes, const std::string& what,
                        NpyValues values = NpyValues::FiniteOnly);

// Reads a regular file (FIFOs, devices and folders are refused before opening): the header
// first, then the data only when the file's size matches what the header declares and the
// float32 copy fits maxFloatBytes. Messages name the path.
Result<Tensor> loadNpy(const std::string& path, NpyValues values = NpyValues::FiniteOnly,
                       std::uint64_t maxFloatBytes = (1ull << 32));

// '<f4', C order, format 1.0 (2.0 only if the header would not fit 1.0), header padded to a
// 64-byte boundary as NumPy does. Precondition: no negative dims and data.size() == numel();
// otherwise std::invalid_argument (a programming error — saveNpy checks it and returns an Error).
std::string encodeNpy(const Tensor& t);

// encodeNpy + writeFileAtomic (no partial file on failure). Errors name the path.
Status saveNpy(const std::string& path, const Tensor& t);

}  // namespace mhascope
