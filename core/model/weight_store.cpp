// Memory-mapped .safetensors files of a model folder (see weight_store.hpp): the map, the shard
// index, and the conversion of rows to float32 with the NaN/Inf guard.
#include "model/weight_store.hpp"

#include <fcntl.h>
#include <sys/mman.h>
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
#include "io/safetensors_internal.hpp"
#include "io/strict_json.hpp"
#include "util/format.hpp"

namespace mhascope::model {

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_), identity_(std::move(o.identity_)) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, size_);
    data_ = o.data_;
    size_ = o.size_;
    identity_ = std::move(o.identity_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) munmap(data_, size_);
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  auto size = regularFileSize(path);  // FIFOs, devices and folders are refused before opening
  if (!size) return size.error();
  MappedFile m;
  if (*size == 0) return m;  // mmap refuses length 0; an empty view fails the header check instead
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fileError(path, std::strerror(errno));
  m.identity_ = path + ":" + fileIdentity(path, fd);
  void* p = mmap(nullptr, static_cast<std::size_t>(*size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int mapErrno = errno;
  ::close(fd);  // the map keeps the file
  if (p == MAP_FAILED) return fileError(path, std::string("cannot memory-map it: ") + std::strerror(mapErrno));
  m.data_ = p;
  m.size_ = static_cast<std::size_t>(*size);
  return m;
}

Status WeightStore::addFile(const std::string& path, const std::vector<std::string>* only, const std::string& indexPath) {
  auto mapped = MappedFile::open(path);
  if (!mapped) {
    if (!indexPath.empty() && !std::filesystem::exists(path)) {
      return fileError(path, "no such file (a shard that " + indexPath + " names)");
    }
    return mapped.error();
  }
  auto file = std::make_shared<MappedFile>(std::move(*mapped));
  const std::string_view bytes = file->bytes();
  // The same header and layout rules as the .safetensors reader (offsets, sizes, dtypes, JSON).
  auto header = safetensors_detail::checkHeader(bytes, bytes.size(), path);
  if (!header) return header.error();
  const auto* base = reinterpret_cast<const unsigned char*>(bytes.data()) + header->dataStart;
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
    t.data = base + e.begin;
    tensors_[e.name] = std::move(t);
  }
  if (only) {
    for (const auto& name : *only) {
      if (!inFile.count(name)) {
        return fileError(path, "has no tensor '" + name + "', which " + indexPath + " places in it");
      }
    }
  }
  maps_.push_back(std::move(file));
  return Ok{};
}

Result<WeightStore> WeightStore::openFolder(const std::string& dir) {
  namespace fs = std::filesystem;
  WeightStore s;
  const std::string indexPath = (fs::path(dir) / "model.safetensors.index.json").string();
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  std::error_code ec;
  if (!fs::exists(indexPath, ec)) {
    if (!fs::exists(single, ec)) {
      std::string hint;
      if (fs::exists(fs::path(dir) / "pytorch_model.bin", ec)) hint = " (pytorch_model.bin is not read: mhascope reads safetensors only)";
      return fileError(dir, "no model.safetensors or model.safetensors.index.json in the folder" + hint);
    }
    if (auto st = s.addFile(single, nullptr, ""); !st) return st.error();
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
  for (const auto& m : maps_) out += m->identity() + "\n";
  return out;
}

std::uint64_t WeightStore::mappedBytes() const {
  std::uint64_t n = 0;
  for (const auto& m : maps_) n += m->bytes().size();
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
  const unsigned char* src = t.data;
  std::size_t nan = 0, inf = 0, firstBad = 0;
  namespace decode = ::mhascope::detail;  // the binary decoders (io/binary_decode.hpp), not model::detail
  if (t.dtype == "F32") {
    std::memcpy(out, src + 4 * first, 4 * n);  // little-endian host: the bytes already are floats
  } else if (t.dtype == "F16") {
    for (std::size_t i = 0; i < n; ++i) out[i] = decode::halfToFloat(decode::loadUnsigned<std::uint16_t>(src + 2 * (first + i), false));
  } else if (t.dtype == "BF16") {
    for (std::size_t i = 0; i < n; ++i) out[i] = decode::bf16ToFloat(decode::loadUnsigned<std::uint16_t>(src + 2 * (first + i), false));
  } else if (t.dtype == "F64") {
    for (std::size_t i = 0; i < n; ++i) {
      const double v = std::bit_cast<double>(decode::loadUnsigned<std::uint64_t>(src + 8 * (first + i), false));
      // Beyond the float range: infinity, refused below like a stored one.
      out[i] = std::isnan(v) ? NAN : std::abs(v) <= static_cast<double>(FLT_MAX) ? static_cast<float>(v) : v > 0 ? INFINITY : -INFINITY;
    }
  } else {
    return fileError(t.file, "unsupported dtype " + t.dtype + " for tensor '" + t.name + "' (mhascope reads F32, F16, BF16, F64)");
  }
  // A branch-free count first (it vectorizes; NaN fails the comparison too), the details only when
  // something is wrong.
  std::size_t notFinite = 0;
  for (std::size_t i = 0; i < n; ++i) notFinite += !(std::fabs(out[i]) <= FLT_MAX);
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

}  // namespace mhascope::model
