// The tensors of a model folder: model.safetensors, or the shards model.safetensors.index.json
// names. Every file is memory-mapped (read-only) and its header checked by the .safetensors
// reader's own rules when the folder opens; numbers are converted to float32 (from F32, F16, BF16
// or F64) only when asked for, tensor by tensor, so opening a model costs its headers and a
// forward holds one layer in float at a time — the file's pages stay the kernel's to share or drop.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attention/tensor.hpp"
#include "util/result.hpp"

namespace mhascope::model {

// A read-only memory map of one whole file; move-only, unmapped when destroyed.
class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  // The file as it was when mapped: path, device, inode, size and modification time. Equal
  // identities: the same file, unchanged (as far as the file system tells).
  const std::string& identity() const { return identity_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  std::string identity_;
};

// One tensor as the file stores it.
struct StoredTensor {
  std::string name;
  std::string file;   // the path it lives in (for messages)
  std::string dtype;  // "F32", "F16", "BF16", "F64", or another the file declares
  Shape shape;
  std::int64_t numel = 0;
  const unsigned char* data = nullptr;  // inside the file's map
  bool readable() const { return dtype == "F32" || dtype == "F16" || dtype == "BF16" || dtype == "F64"; }
};

class WeightStore {
 public:
  // Opens `dir`/model.safetensors.index.json and its shards when the index exists, else
  // `dir`/model.safetensors. Every shard the index names must exist and hold the tensors the
  // index places in it; messages name the file, the shard and the tensor.
  static Result<WeightStore> openFolder(const std::string& dir);

  const StoredTensor* find(const std::string& name) const;
  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
  // The files' bytes (what the maps cover).
  std::uint64_t mappedBytes() const;
  // Every mapped file's identity (MappedFile::identity), in the order they were opened.
  std::string identity() const;
  // Rows [row0, row0 + rows) of a tensor seen as (dim 0, rest), converted into `out`
  // (rows × rest floats). NaN/±Inf is an error naming the tensor, its file and the counts.
  Status readRows(const StoredTensor& t, std::int64_t row0, std::int64_t rows, float* out) const;
  // The whole tensor.
  Status read(const StoredTensor& t, float* out) const { return readRows(t, 0, t.shape.empty() ? 1 : t.shape[0], out); }

 private:
  Status addFile(const std::string& path, const std::vector<std::string>* only, const std::string& indexPath);
  std::vector<std::shared_ptr<MappedFile>> maps_;
  std::map<std::string, StoredTensor> tensors_;
};

}  // namespace mhascope::model
