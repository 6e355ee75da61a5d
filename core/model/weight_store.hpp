// The tensors of a model folder: model.safetensors, or the shards model.safetensors.index.json
// names. Every file is opened (read-only, kept open) and its header checked by the .safetensors
// reader's own rules when the folder opens; numbers are read and converted to float32 (from F32,
// F16, BF16 or F64) only when asked for, tensor by tensor, so opening a model costs its headers and
// a forward holds one layer in float at a time — the file's pages stay the kernel's page cache.
// Reads are positioned reads of the open file, never a memory map: a file shortened or rewritten in
// place while a model is open is an error naming the file at the next read, not a signal (a map
// would raise SIGBUS on a page past the new end). Replacing the file by rename or deleting it keeps
// the opened file readable, as before.
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

// One weight file, open for reading; move-only, closed when destroyed.
class WeightFile {
 public:
  static Result<WeightFile> open(const std::string& path);
  WeightFile() = default;
  WeightFile(WeightFile&& o) noexcept;
  WeightFile& operator=(WeightFile&& o) noexcept;
  WeightFile(const WeightFile&) = delete;
  WeightFile& operator=(const WeightFile&) = delete;
  ~WeightFile();
  const std::string& path() const { return path_; }
  // The size when opened.
  std::uint64_t size() const { return size_; }
  // The file as it was when opened: path, device, inode, size and modification time. Equal
  // identities: the same file, unchanged (as far as the file system tells).
  const std::string& identity() const { return identity_; }
  // `n` bytes at `offset` into `out`. The file must still have the size and modification time it
  // had when opened: one that changed in place is an error naming it and both sizes.
  Status readAt(std::uint64_t offset, std::size_t n, void* out) const;

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::int64_t mtimeNs_ = 0;
  std::string path_, identity_;
};

// One tensor as the file stores it.
struct StoredTensor {
  std::string name;
  std::string file;   // the path it lives in (for messages)
  std::string dtype;  // "F32", "F16", "BF16", "F64", or another the file declares
  Shape shape;
  std::int64_t numel = 0;
  const WeightFile* source = nullptr;  // the open file it lives in (owned by its WeightStore)
  std::uint64_t offset = 0;            // its first byte in that file
  bool readable() const { return dtype == "F32" || dtype == "F16" || dtype == "BF16" || dtype == "F64"; }
};

class WeightStore {
 public:
  // Opens `dir`/model.safetensors when it exists, else `dir`/model.safetensors.index.json and its
  // shards (Hugging Face's loader's order). Every shard the index names must exist and hold the
  // tensors the index places in it; messages name the file, the shard and the tensor.
  static Result<WeightStore> openFolder(const std::string& dir);

  const StoredTensor* find(const std::string& name) const;
  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }
  // Which files were read when that is not plain: empty, or a sentence naming the file read and the
  // one left (a folder with both model.safetensors and an index).
  const std::string& note() const { return note_; }
  // The files' bytes, as opened.
  std::uint64_t fileBytes() const;
  // Every file's identity (WeightFile::identity), in the order they were opened.
  std::string identity() const;
  // Rows [row0, row0 + rows) of a tensor seen as (dim 0, rest), converted into `out`
  // (rows × rest floats). NaN/±Inf is an error naming the tensor, its file and the counts; so is a
  // file that changed since the folder opened.
  Status readRows(const StoredTensor& t, std::int64_t row0, std::int64_t rows, float* out) const;
  // The whole tensor.
  Status read(const StoredTensor& t, float* out) const { return readRows(t, 0, t.shape.empty() ? 1 : t.shape[0], out); }

  // MXFP4 (io/mxfp4.hpp, gpt-oss's experts): the tensor `name` stored as `name`_blocks (…, R, G, 16) U8 and
  // `name`_scales (…, R, G) U8. Whether the folder holds such a pair:
  bool hasMxfp4(const std::string& name) const;
  // The dequantised tensor's shape (…, R, G·32), after checking the pair (both present, both U8, the shapes agree);
  // every message names the tensor and what is wrong.
  Result<Shape> mxfp4Shape(const std::string& name) const;
  // Items [item0, item0 + items) of the leading axis (an expert each) dequantised into out (items × the rest
  // floats), as transformers' gpt-oss integration unpacks them (before it transposes the last two axes), read a
  // bounded block of bytes at a time. A scale byte of 255 (not a number in MXFP4) is an error naming the tensor.
  Status readMxfp4(const std::string& name, std::int64_t item0, std::int64_t items, float* out) const;

 private:
  Status addFile(const std::string& path, const std::vector<std::string>* only, const std::string& indexPath);
  std::vector<std::shared_ptr<WeightFile>> files_;
  std::map<std::string, StoredTensor> tensors_;
  std::string note_;
};

}  // namespace mhascope::model
