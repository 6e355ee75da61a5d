// The .safetensors files of a model folder (see weight_store.hpp): the open files, the shard
// index, and the conversion of rows to float32 with the NaN/Inf guard.
#include "model/weight_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "io/binary_decode.hpp"
#include "io/file_io.hpp"
#include "io/mxfp4.hpp"
#include "io/safetensors_internal.hpp"
#include "io/strict_json.hpp"
#include "util/finite.hpp"
#include "util/format.hpp"

namespace mhascope::model {

WeightFile::WeightFile(WeightFile&& o) noexcept
    : fd_(o.fd_), size_(o.size_), mtimeNs_(o.mtimeNs_), path_(std::move(o.path_)), identity_(std::move(o.identity_)) {
  o.fd_ = -1;
}

WeightFile& WeightFile::operator=(WeightFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    mtimeNs_ = o.mtimeNs_;
    path_ = std::move(o.path_);
    identity_ = std::move(o.identity_);
    o.fd_ = -1;
  }
  return *this;
}

WeightFile::~WeightFile() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

std::int64_t mtimeNsOf(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

Result<WeightFile> WeightFile::open(const std::string& path) {
  if (auto size = regularFileSize(path); !size) return size.error();  // FIFOs, devices and folders are refused before opening
  WeightFile f;
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd_ < 0) return fileError(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd_, &st) != 0) return fileError(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fileError(path, "is no longer a regular file");
  f.size_ = static_cast<std::uint64_t>(st.st_size);
  f.mtimeNs_ = mtimeNsOf(st);
  f.path_ = path;
  f.identity_ = path + ":" + fileIdentity(path, f.fd_);
  return f;
}

Status WeightFile::readAt(std::uint64_t offset, std::size_t n, void* out) const {
  // What the folder checked when it opened is only true of the file as it was then.
  auto changed = [&](const std::string& now) {
    return fileError(path_, "changed while the model was open (" + now + "; it had " + std::to_string(size_) +
                                " bytes when opened): open the folder again");
  };
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return fileError(path_, std::strerror(errno));
  if (static_cast<std::uint64_t>(st.st_size) != size_) return changed("it now has " + std::to_string(st.st_size) + " bytes");
  if (mtimeNsOf(st) != mtimeNs_) return changed("it was written to");
  auto* dst = static_cast<char*>(out);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return fileError(path_, std::string("read failed: ") + std::strerror(errno));
    if (got == 0) {  // shortened between the check above and this read
      return changed("it ends at byte " + std::to_string(offset + done) + ", before the " + std::to_string(offset + n) +
                     " a tensor needs");
    }
    done += static_cast<std::size_t>(got);
  }
  return Ok{};
}

Status WeightStore::addFile(const std::string& path, const std::vector<std::string>* only, const std::string& indexPath) {
  auto opened = WeightFile::open(path);
  if (!opened) {
    std::error_code ec;
    if (!indexPath.empty() && !std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
      return fileError(path, "no such file (a shard that " + indexPath + " names)");
    }
    return opened.error();
  }
  auto file = std::make_shared<WeightFile>(std::move(*opened));
  // The length and the header only; checkHeader's own rules bound the length by the file's size
  // and by its limit before more than the length is read.
  namespace st = safetensors_detail;
  std::string prefix(std::min<std::uint64_t>(file->size(), st::kLengthBytes), '\0');
  if (auto r = file->readAt(0, prefix.size(), prefix.data()); !r) return r.error();
  if (prefix.size() == st::kLengthBytes) {
    const auto headerLen = ::mhascope::detail::loadUnsigned<std::uint64_t>(reinterpret_cast<const unsigned char*>(prefix.data()), false);
    if (headerLen <= st::kMaxHeaderBytes && headerLen <= file->size() - st::kLengthBytes) {
      prefix.resize(st::kLengthBytes + static_cast<std::size_t>(headerLen));
      if (auto r = file->readAt(st::kLengthBytes, static_cast<std::size_t>(headerLen), prefix.data() + st::kLengthBytes); !r) {
        return r.error();
      }
    }
  }
  // The same header and layout rules as the .safetensors reader (offsets, sizes, dtypes, JSON).
  auto header = st::checkHeader(prefix, file->size(), path);
  if (!header) return header.error();
  std::set<std::string> inFile;
  for (const auto& e : header->entries) {
    inFile.insert(e.name);
    if (only && std::find(only->begin(), only->end(), e.name) == only->end()) continue;  // the index places it elsewhere
    StoredTensor t;
    t.name = e.name;
    t.file = path;
    t.dtype = std::string(e.info->name);
    t.shape.assign(e.shape.begin(), e.shape.end());
    t.numel = e.numel;
    t.source = file.get();
    t.offset = header->dataStart + e.begin;
    tensors_[e.name] = std::move(t);
  }
  if (only) {
    for (const auto& name : *only) {
      if (!inFile.count(name)) {
        return fileError(path, "has no tensor '" + name + "', which " + indexPath + " places in it");
      }
    }
  }
  files_.push_back(std::move(file));
  return Ok{};
}

Result<WeightStore> WeightStore::openFolder(const std::string& dir) {
  namespace fs = std::filesystem;
  WeightStore s;
  const std::string indexPath = (fs::path(dir) / "model.safetensors.index.json").string();
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  std::error_code ec;
  // Hugging Face's loader reads model.safetensors when it exists and the index only otherwise:
  // the same order here, and a folder with both says which one was read.
  if (fs::exists(single, ec) || !fs::exists(indexPath, ec)) {
    if (!fs::exists(single, ec)) {
      std::string hint;
      if (fs::exists(fs::path(dir) / "pytorch_model.bin", ec)) hint = " (pytorch_model.bin is not read: mhascope reads safetensors only)";
      return fileError(dir, "no model.safetensors or model.safetensors.index.json in the folder" + hint);
    }
    if (auto st = s.addFile(single, nullptr, ""); !st) return st.error();
    if (fs::exists(indexPath, ec)) {
      s.note_ = "model.safetensors (the folder's model.safetensors.index.json is not read: as in Hugging Face's "
                "loader, the single file comes first)";
    }
    return s;
  }
  auto text = readFile(indexPath, 64ull << 20);
  if (!text) return text.error();
  auto parsed = parseStrictJson(*text, indexPath);
  if (!parsed) return parsed.error();
  const nlohmann::json& j = *parsed;
  if (!j.is_object() || !j.contains("weight_map") || !j.at("weight_map").is_object()) {
    return fileError(indexPath, "needs a \"weight_map\" object of tensor name -> shard file");
  }
  std::map<std::string, std::vector<std::string>> byShard;  // shard file -> its tensors
  for (const auto& [name, file] : j.at("weight_map").items()) {
    if (!file.is_string()) return fileError(indexPath, "weight_map['" + name + "'] must be a file name, got " + file.dump());
    const std::string f = file.get<std::string>();
    // A shard lives beside the index: a path out of the folder is not followed.
    if (f.empty() || f.find('/') != std::string::npos || f.find('\\') != std::string::npos || f == "." || f == "..") {
      return fileError(indexPath, "weight_map['" + name + "'] names '" + f + "', not a file name in the folder");
    }
    if (f.size() > 255) {  // NAME_MAX: no such file can exist, and the name would swamp the message
      return fileError(indexPath, "weight_map['" + name + "'] names a file of " + std::to_string(f.size()) +
                                      " bytes; a file name has at most 255");
    }
    byShard[f].push_back(name);
  }
  if (byShard.empty()) return fileError(indexPath, "the weight_map names no tensors");
  for (const auto& [file, names] : byShard) {
    if (auto st = s.addFile((fs::path(dir) / file).string(), &names, indexPath); !st) return st.error();
  }
  return s;
}

const StoredTensor* WeightStore::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::string WeightStore::identity() const {
  std::string out;
  for (const auto& f : files_) out += f->identity() + "\n";
  return out;
}

std::uint64_t WeightStore::fileBytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files_) n += f->size();
  return n;
}

Status WeightStore::readRows(const StoredTensor& t, std::int64_t row0, std::int64_t rows, float* out) const {
  const std::int64_t dim0 = t.shape.empty() ? 1 : t.shape[0];
  const std::int64_t rest = dim0 > 0 ? t.numel / dim0 : 0;
  if (row0 < 0 || rows < 0 || row0 + rows > dim0) {
    return fileError(t.file, "rows " + std::to_string(row0) + ".." + std::to_string(row0 + rows) + " of tensor '" +
                                 t.name + "' are outside its " + std::to_string(dim0) + " rows");
  }
  const std::size_t first = static_cast<std::size_t>(row0 * rest), n = static_cast<std::size_t>(rows * rest);
  std::size_t nan = 0, inf = 0, firstBad = 0;
  namespace decode = ::mhascope::detail;  // the binary decoders (io/binary_decode.hpp), not model::detail
  if (!t.source) return fileError(t.file, "tensor '" + t.name + "' belongs to no open file");
  std::size_t width = 0;  // bytes per stored number
  if (t.dtype == "F32") width = 4;
  if (t.dtype == "F16" || t.dtype == "BF16") width = 2;
  if (t.dtype == "F64") width = 8;
  if (width == 0) {
    return fileError(t.file, "unsupported dtype " + t.dtype + " for tensor '" + t.name + "' (mhascope reads F32, F16, BF16, F64)");
  }
  const std::uint64_t at = t.offset + width * first;
  if (width == 4) {
    // Little-endian host: the bytes already are floats.
    if (auto r = t.source->readAt(at, 4 * n, out); !r) return r.error();
  } else {
    // Read a block, convert it, read the next: a bounded buffer whatever the tensor's size.
    constexpr std::size_t kBlock = 1 << 16;  // numbers per read
    std::vector<unsigned char> raw(width * std::min(n, kBlock));
    for (std::size_t i0 = 0; i0 < n; i0 += kBlock) {
      const std::size_t m = std::min(kBlock, n - i0);
      if (auto r = t.source->readAt(at + width * i0, width * m, raw.data()); !r) return r.error();
      const unsigned char* src = raw.data();
      float* dst = out + i0;
      if (t.dtype == "F16") {
        for (std::size_t i = 0; i < m; ++i) dst[i] = decode::halfToFloat(decode::loadUnsigned<std::uint16_t>(src + 2 * i, false));
      } else if (t.dtype == "BF16") {
        for (std::size_t i = 0; i < m; ++i) dst[i] = decode::bf16ToFloat(decode::loadUnsigned<std::uint16_t>(src + 2 * i, false));
      } else {
        for (std::size_t i = 0; i < m; ++i) {
          const double v = std::bit_cast<double>(decode::loadUnsigned<std::uint64_t>(src + 8 * i, false));
          // Beyond the float range: infinity, refused below like a stored one.
          dst[i] = std::isnan(v) ? NAN : std::abs(v) <= static_cast<double>(FLT_MAX) ? static_cast<float>(v) : v > 0 ? INFINITY : -INFINITY;
        }
      }
    }
  }
  // The count first, the details only when something is wrong.
  const std::size_t notFinite = countNonFinite(out, n);
  for (std::size_t i = 0; notFinite > 0 && i < n; ++i) {
    if (std::isfinite(out[i])) continue;
    if (nan + inf == 0) firstBad = first + i;
    (std::isnan(out[i]) ? nan : inf) += 1;
  }
  if (nan + inf > 0) {
    return fileError(t.file, "tensor '" + t.name + "' has " + std::to_string(nan) + " NaN and " + std::to_string(inf) +
                                 " Inf values (the first at flat index " + std::to_string(firstBad) +
                                 "); mhascope never zeroes them silently");
  }
  return Ok{};
}

bool WeightStore::hasMxfp4(const std::string& name) const {
  return find(name + "_blocks") != nullptr || find(name + "_scales") != nullptr;
}

Result<Shape> WeightStore::mxfp4Shape(const std::string& name) const {
  const StoredTensor* blocks = find(name + "_blocks");
  const StoredTensor* scales = find(name + "_scales");
  const std::string what = "MXFP4 tensor '" + name + "'";
  if (!blocks || !scales) {
    return makeError(what + " needs both " + name + "_blocks and " + name + "_scales; the folder has only " +
                     (blocks ? name + "_blocks" : name + "_scales"));
  }
  for (const StoredTensor* t : {blocks, scales}) {
    if (t->dtype != "U8") return fileError(t->file, what + ": '" + t->name + "' must be U8 bytes, got " + t->dtype);
  }
  const Shape& b = blocks->shape;
  const Shape& s = scales->shape;
  if (b.size() < 2 || b.back() != kMxfp4BlockBytes) {
    return fileError(blocks->file, what + ": '" + blocks->name + "' must be (…, G, " + std::to_string(kMxfp4BlockBytes) +
                                       ") — 16 bytes hold a block of 32 values — got " + shapeToString(b));
  }
  if (s != Shape(b.begin(), b.end() - 1)) {
    return fileError(scales->file, what + ": '" + scales->name + "' must have the blocks' shape without their last axis, " +
                                       shapeToString(Shape(b.begin(), b.end() - 1)) + ", got " + shapeToString(s));
  }
  Shape out(b.begin(), b.end() - 1);
  out.back() *= kMxfp4BlockValues;
  return out;
}

Status WeightStore::readMxfp4(const std::string& name, std::int64_t item0, std::int64_t items, float* out) const {
  auto shape = mxfp4Shape(name);
  if (!shape) return shape.error();
  const StoredTensor& blocks = *find(name + "_blocks");
  const StoredTensor& scales = *find(name + "_scales");
  const std::int64_t dim0 = shape->size() > 1 ? shape->front() : 1;
  if (item0 < 0 || items < 0 || item0 + items > dim0) {
    return fileError(blocks.file, "items " + std::to_string(item0) + ".." + std::to_string(item0 + items) +
                                      " of MXFP4 tensor '" + name + "' are outside its " + std::to_string(dim0));
  }
  if (!blocks.source || !scales.source) return fileError(blocks.file, "MXFP4 tensor '" + name + "' belongs to no open file");
  const std::int64_t groupsPerItem = scales.numel / dim0;  // blocks of 32 values in one item
  // A bounded number of blocks per read, whatever the tensor's size.
  constexpr std::int64_t kGroups = 1 << 12;
  std::vector<std::uint8_t> packed(static_cast<std::size_t>(std::min(groupsPerItem * items, kGroups) * kMxfp4BlockBytes));
  std::vector<std::uint8_t> scale(static_cast<std::size_t>(std::min(groupsPerItem * items, kGroups)));
  const std::int64_t first = item0 * groupsPerItem, total = items * groupsPerItem;
  for (std::int64_t g0 = 0; g0 < total; g0 += kGroups) {
    const std::int64_t n = std::min(kGroups, total - g0);
    const std::uint64_t at = static_cast<std::uint64_t>(first + g0);
    if (auto r = blocks.source->readAt(blocks.offset + at * kMxfp4BlockBytes, static_cast<std::size_t>(n * kMxfp4BlockBytes),
                                       packed.data());
        !r) {
      return r.error();
    }
    if (auto r = scales.source->readAt(scales.offset + at, static_cast<std::size_t>(n), scale.data()); !r) return r.error();
    dequantiseMxfp4(packed.data(), scale.data(), n, out + g0 * kMxfp4BlockValues);
  }
  const std::size_t count = static_cast<std::size_t>(total * kMxfp4BlockValues);
  if (const std::size_t bad = countNonFinite(out, count); bad > 0) {
    return fileError(scales.file, "MXFP4 tensor '" + name + "' has " + std::to_string(bad) +
                                      " values that are not finite numbers (a scale byte of 255 is not a number in "
                                      "MXFP4); mhascope never zeroes them silently");
  }
  return Ok{};
}

}  // namespace mhascope::model
