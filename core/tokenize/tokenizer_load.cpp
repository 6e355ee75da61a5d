// The two file formats of a byte-level BPE tokenizer, read from bytes (untrusted): Hugging Face's
// tokenizer.json, and GPT-2's vocab.json + merges.txt. Every refusal is one line that names the
// file, the place in it and the problem.
//
// [SECTION] strict JSON parsing (duplicate keys, depth) and small value readers
// [SECTION] the vocabulary object (both formats)
// [SECTION] vocab.json + merges.txt
// [SECTION] tokenizer.json: pre-tokenizer, normalizer, decoder readers
// [SECTION] tokenizer.json: model, merges, added tokens, post-processor (BOS)
#include <nlohmann/json.hpp>

#include <set>

#include "tokenize/bpe_tokenizer.hpp"
#include "tokenize/byte_level.hpp"
#include "tokenize/text_utf8.hpp"

namespace mhascope::tokenize {
namespace {

using nlohmann::json;

struct ParseFailure {
  std::string message;
};

// [SECTION] strict JSON parsing (duplicate keys, depth) and small value readers

// nlohmann keeps the last of duplicate keys silently and nests without limit: a vocabulary with
// a key twice would lose one id unseen, so both are refused while parsing. (mhascope_core has the
// same rule in io/strict_json; this module does not link mhascope_core.)
Result<json> parseJson(std::string_view text, const std::string& file) {
  if (text.size() > kMaxTokenizerFileBytes) {
    return makeError(file + ": " + std::to_string(text.size()) + " bytes; a tokenizer file may hold at most " +
                     std::to_string(kMaxTokenizerFileBytes) + " bytes (64 MiB)");
  }
  std::vector<std::set<std::string>> keys;
  constexpr int kMaxDepth = 32;
  try {
    json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth > kMaxDepth) throw ParseFailure{file + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels"};
      if (event == json::parse_event_t::object_start) {
        keys.emplace_back();
      } else if (event == json::parse_event_t::object_end) {
        if (!keys.empty()) keys.pop_back();
      } else if (event == json::parse_event_t::key) {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys.empty() && !keys.back().insert(key).second) {
          throw ParseFailure{file + ": duplicate key '" + key + "'"};
        }
      }
      return true;
    };
    return json::parse(text.begin(), text.end(), check, /*allow_exceptions=*/true);
  } catch (const ParseFailure& f) {
    return makeError(f.message);
  } catch (const json::exception& e) {
    return makeError(file + ": not valid JSON: " + e.what());
  }
}

std::string typeName(const json& j) { return j.is_null() ? "null" : j.type_name(); }

// A JSON value as a short quoted text for messages ("'NFC'", "42"), cut at 60 bytes.
std::string shown(const json& j) {
  std::string s = j.is_string() ? quote(j.get_ref<const std::string&>()) : j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return replaceInvalidUtf8(s);
}

std::string shownText(std::string_view s) {
  std::string out(s.substr(0, 60));
  if (s.size() > 60) out += "...";
  return quote(replaceInvalidUtf8(out));
}

const json* member(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

bool isNullOrAbsent(const json* j) { return j == nullptr || j->is_null(); }

Result<bool> optionalBool(const json& obj, const char* key, bool fallback, const std::string& where) {
  const json* j = member(obj, key);
  if (isNullOrAbsent(j)) return fallback;
  if (!j->is_boolean()) return makeError(where + "." + key + " is " + typeName(*j) + ", expected true or false");
  return j->get<bool>();
}

Result<std::int32_t> tokenIdValue(const json& j, const std::string& where) {
  if (!j.is_number_integer()) return makeError(where + " is " + typeName(j) + " " + shown(j) + ", expected an integer token id");
  const auto v = j.get<std::int64_t>();
  if (j.is_number_unsigned() ? j.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxTokenId)
                             : (v < 0 || v > kMaxTokenId)) {
    return makeError(where + " is " + j.dump() + ", outside 0 … " + std::to_string(kMaxTokenId));
  }
  return static_cast<std::int32_t>(v);
}

// [SECTION] the vocabulary object (both formats)

// The shared part of both formats: the vocabulary object, spelling → id.
Status readVocab(const json& vocab, const std::string& where,
                     std::unordered_map<std::string, std::int32_t>& spellingToId,
                     std::unordered_map<std::int32_t, std::string>& idToSpelling) {
    if (!vocab.is_object()) return makeError(where + " is " + typeName(vocab) + ", expected an object of token → id");
    if (vocab.size() > kMaxVocabTokens) {
      return makeError(where + " holds " + std::to_string(vocab.size()) + " tokens; at most " +
                       std::to_string(kMaxVocabTokens) + " are supported");
    }
    spellingToId.reserve(vocab.size());
    idToSpelling.reserve(vocab.size());
    for (const auto& [spelling, value] : vocab.items()) {
      const std::string at = where + "[" + shownText(spelling) + "]";
      if (spelling.empty()) return makeError(where + " has an empty token");
      auto id = tokenIdValue(value, at);
      if (!id) return id.error();
      const auto [it, fresh] = idToSpelling.emplace(*id, spelling);
      if (!fresh) {
        return makeError(where + ": id " + std::to_string(*id) + " is given to both " + shownText(it->second) +
                         " and " + shownText(spelling));
      }
      spellingToId.emplace(spelling, *id);
    }
    return Ok{};
}

}  // namespace

// [SECTION] vocab.json + merges.txt

Result<BpeTokenizer> BpeTokenizer::fromVocabAndMerges(std::string_view vocabBytes, const std::string& vocabFile,
                                                      std::string_view mergesBytes, const std::string& mergesFile) {
  BpeTokenizer t;
  auto vocab = parseJson(vocabBytes, vocabFile);
  if (!vocab) return vocab.error();
  std::unordered_map<std::int32_t, std::string> idToSpelling;
  if (auto st = readVocab(*vocab, vocabFile, t.vocab_, idToSpelling); !st) return st.error();
  for (auto& [id, spelling] : idToSpelling) {
    Entry e;
    e.bytes = vocabTextToBytes(spelling);
    // GPT-2's own tokenizer treats "<|endoftext|>" as a special token, never split into pieces.
    const bool special = spelling.size() > 4 && spelling.compare(0, 2, "<|") == 0 &&
                         spelling.compare(spelling.size() - 2, 2, "|>") == 0;
    if (special) {
      e.special = e.added = true;
      e.bytes = spelling;
      t.added_.push_back(AddedToken{id, spelling, true});
    }
    e.text = std::move(spelling);
    t.entries_.emplace(id, std::move(e));
  }
  std::sort(t.added_.begin(), t.added_.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });

  if (mergesBytes.size() > kMaxTokenizerFileBytes) {
    return makeError(mergesFile + ": " + std::to_string(mergesBytes.size()) + " bytes; a tokenizer file may hold at most " +
                     std::to_string(kMaxTokenizerFileBytes) + " bytes (64 MiB)");
  }
  if (!isValidUtf8(mergesBytes)) return makeError(mergesFile + ": not UTF-8 text");
  std::size_t lineNo = 0;
  std::size_t pos = 0;
  while (pos < mergesBytes.size()) {
    std::size_t end = mergesBytes.find('\n', pos);
    if (end == std::string_view::npos) end = mergesBytes.size();
    std::string_view line = mergesBytes.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // written on Windows
    if (lineNo == 1 && line.substr(0, 8) == "#version") continue;
    const std::string where = mergesFile + " line " + std::to_string(lineNo);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      return makeError(where + ": " + shownText(line) + " is not two tokens separated by one space");
    }
    if (t.merges_.size() >= kMaxMerges) {
      return makeError(mergesFile + ": more than " + std::to_string(kMaxMerges) + " merges");
    }
    if (auto st = t.addMerge(line.substr(0, space), line.substr(space + 1), where); !st) return st.error();
  }
  t.steps_.push_back(PreTokenizerStep{});  // GPT-2: ByteLevel with its regex, no prefix space
  if (auto st = t.finish(vocabFile); !st) return st.error();
  return t;
}

namespace {

// [SECTION] tokenizer.json: pre-tokenizer, normalizer, decoder readers

Result<std::vector<PreTokenizerStep>> readPreTokenizer(const json* pre, const std::string& file) {
  const std::string where = file + ": pre_tokenizer";
  if (isNullOrAbsent(pre)) {
    return makeError(where + " is missing; byte-level BPE needs a ByteLevel pre-tokenizer");
  }
  std::vector<const json*> list;
  std::vector<std::string> places;
  if (!pre->is_object()) return makeError(where + " is " + typeName(*pre) + ", expected an object");
  const json* type = member(*pre, "type");
  if (type != nullptr && type->is_string() && type->get<std::string>() == "Sequence") {
    const json* items = member(*pre, "pretokenizers");
    if (items == nullptr || !items->is_array()) return makeError(where + ".pretokenizers is missing or not a list");
    for (std::size_t k = 0; k < items->size(); ++k) {
      list.push_back(&(*items)[k]);
      places.push_back(where + ".pretokenizers[" + std::to_string(k) + "]");
    }
  } else {
    list.push_back(pre);
    places.push_back(where);
  }
  std::vector<PreTokenizerStep> steps;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& p = *list[k];
    const std::string& at = places[k];
    if (!p.is_object()) return makeError(at + " is " + typeName(p) + ", expected an object");
    const json* t = member(p, "type");
    if (t == nullptr || !t->is_string()) return makeError(at + " has no \"type\"");
    const std::string kind = t->get<std::string>();
    PreTokenizerStep step;
    if (kind == "ByteLevel") {
      step.kind = PreTokenizerStep::Kind::ByteLevel;
      // Hugging Face's defaults when a key is absent: add_prefix_space true, use_regex true.
      auto prefix = optionalBool(p, "add_prefix_space", true, at);
      if (!prefix) return prefix.error();
      auto regex = optionalBool(p, "use_regex", true, at);
      if (!regex) return regex.error();
      step.addPrefixSpace = *prefix;
      step.useRegex = *regex;
    } else if (kind == "Split") {
      step.kind = PreTokenizerStep::Kind::Split;
      const json* pattern = member(p, "pattern");
      const json* regex = (pattern != nullptr && pattern->is_object()) ? member(*pattern, "Regex") : nullptr;
      if (regex == nullptr || !regex->is_string()) {
        return makeError(at + ": a Split pattern other than a regex (" + (pattern ? shown(*pattern) : "none") +
                         ") is not supported");
      }
      const std::string source = regex->get<std::string>();
      bool known = false;
      for (SplitRegex r : {SplitRegex::Gpt2, SplitRegex::Llama3, SplitRegex::Qwen2}) {
        if (source == splitRegexPattern(r)) {
          step.regex = r;
          known = true;
        }
      }
      if (!known) {
        return makeError(at + ": the Split regex " + shownText(source) +
                         " is not one this tokenizer implements (the GPT-2, Llama-3 and Qwen2 regexes)");
      }
      const json* behavior = member(p, "behavior");
      if (behavior == nullptr || !behavior->is_string() || behavior->get<std::string>() != "Isolated") {
        return makeError(at + ": Split behavior " + (behavior ? shown(*behavior) : "(missing)") +
                         " is not supported (only \"Isolated\")");
      }
      auto invert = optionalBool(p, "invert", false, at);
      if (!invert) return invert.error();
      if (*invert) return makeError(at + ": an inverted Split is not supported");
    } else if (kind == "Digits") {
      step.kind = PreTokenizerStep::Kind::Digits;
      auto individual = optionalBool(p, "individual_digits", false, at);
      if (!individual) return individual.error();
      step.individualDigits = *individual;
    } else {
      return makeError(at + ": pre-tokenizer '" + replaceInvalidUtf8(kind) +
                       "' is not supported (byte-level BPE: ByteLevel, Split with a known regex, Digits)");
    }
    steps.push_back(step);
  }
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].kind == PreTokenizerStep::Kind::ByteLevel && k + 1 != steps.size()) {
      return makeError(places[k] + ": ByteLevel must be the last pre-tokenizer (the splits before it work on text)");
    }
  }
  if (steps.empty() || steps.back().kind != PreTokenizerStep::Kind::ByteLevel) {
    return makeError(where + " has no ByteLevel step; only byte-level BPE tokenizers are supported");
  }
  return steps;
}

// No normalizer, NFC (Qwen2), or a Sequence of those: true when the text is to be put in NFC.
Result<bool> readNormalizer(const json* norm, const std::string& file) {
  if (isNullOrAbsent(norm)) return false;
  const std::string where = file + ": normalizer";
  if (norm->is_object()) {
    const json* type = member(*norm, "type");
    const std::string kind = (type != nullptr && type->is_string()) ? type->get<std::string>() : "";
    if (kind == "NFC") return true;
    const json* inner = member(*norm, "normalizers");
    if (kind == "Sequence" && inner != nullptr && inner->is_array()) {
      bool nfc = false;
      for (const json& n : *inner) {
        auto one = readNormalizer(&n, file);
        if (!one) return one.error();
        nfc = nfc || *one;
      }
      return nfc;
    }
    if (!kind.empty()) {
      return makeError(where + " " + quote(replaceInvalidUtf8(kind)) +
                       " is not supported (only NFC: another would change the text before splitting it)");
    }
  }
  return makeError(where + " " + shown(*norm) + " is not supported");
}

Status checkDecoder(const json* dec, const std::string& file) {
  if (isNullOrAbsent(dec)) return Ok{};
  const std::string where = file + ": decoder";
  const json* type = dec->is_object() ? member(*dec, "type") : nullptr;
  const std::string kind = (type != nullptr && type->is_string()) ? type->get<std::string>() : "";
  if (kind == "ByteLevel") return Ok{};
  return makeError(where + " " + (kind.empty() ? shown(*dec) : quote(replaceInvalidUtf8(kind))) +
                   " is not supported (byte-level BPE decodes with ByteLevel)");
}

}  // namespace

// [SECTION] tokenizer.json: model, merges, added tokens, post-processor (BOS)

Result<BpeTokenizer> BpeTokenizer::fromTokenizerJson(std::string_view bytes, const std::string& file) {
  auto parsed = parseJson(bytes, file);
  if (!parsed) return parsed.error();
  const json& root = *parsed;
  if (!root.is_object()) return makeError(file + ": is " + typeName(root) + ", expected a tokenizer.json object");
  BpeTokenizer t;

  const json* model = member(root, "model");
  if (model == nullptr || !model->is_object()) return makeError(file + ": model is missing or not an object");
  const json* mtype = member(*model, "type");
  if (mtype == nullptr || !mtype->is_string()) return makeError(file + ": model.type is missing");
  if (mtype->get<std::string>() != "BPE") {
    return makeError(file + ": model type '" + replaceInvalidUtf8(mtype->get<std::string>()) +
                     "' is not supported (byte-level BPE only)");
  }
  const std::string m = file + ": model";
  if (const json* d = member(*model, "dropout"); !isNullOrAbsent(d)) {
    if (!d->is_number() || d->get<double>() != 0.0) {
      return makeError(m + ".dropout " + shown(*d) + " is not supported (BPE dropout splits text at random)");
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* v = member(*model, key);
    if (!isNullOrAbsent(v) && !(v->is_string() && v->get<std::string>().empty())) {
      return makeError(m + "." + key + " " + shown(*v) + " is not supported in byte-level BPE");
    }
  }
  auto byteFallback = optionalBool(*model, "byte_fallback", false, m);
  if (!byteFallback) return byteFallback.error();
  if (*byteFallback) return makeError(m + ".byte_fallback is true: byte-fallback BPE (SentencePiece style) is not supported");
  auto ignore = optionalBool(*model, "ignore_merges", false, m);
  if (!ignore) return ignore.error();
  t.ignoreMerges_ = *ignore;

  const json* vocab = member(*model, "vocab");
  if (vocab == nullptr) return makeError(m + ".vocab is missing");
  std::unordered_map<std::int32_t, std::string> idToSpelling;
  if (auto st = readVocab(*vocab, m + ".vocab", t.vocab_, idToSpelling); !st) return st.error();
  for (auto& [id, spelling] : idToSpelling) {
    Entry e;
    e.bytes = vocabTextToBytes(spelling);
    e.text = std::move(spelling);
    t.entries_.emplace(id, std::move(e));
  }

  const json* merges = member(*model, "merges");
  if (merges == nullptr || !merges->is_array()) return makeError(m + ".merges is missing or not a list");
  if (merges->size() > kMaxMerges) {
    return makeError(m + ".merges holds " + std::to_string(merges->size()) + " merges; at most " +
                     std::to_string(kMaxMerges) + " are supported");
  }
  for (std::size_t k = 0; k < merges->size(); ++k) {
    const json& item = (*merges)[k];
    const std::string where = m + ".merges[" + std::to_string(k) + "]";
    std::string left, right;
    if (item.is_string()) {  // "a b"
      const std::string& s = item.get_ref<const std::string&>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == s.size() || s.find(' ', space + 1) != std::string::npos) {
        return makeError(where + ": " + shownText(s) + " is not two tokens separated by one space");
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()) {  // ["a", "b"]
      left = item[0].get<std::string>();
      right = item[1].get<std::string>();
    } else {
      return makeError(where + " is " + shown(item) + ", expected \"a b\" or [\"a\", \"b\"]");
    }
    if (auto st = t.addMerge(left, right, where); !st) return st.error();
  }

  // Added tokens: matched in the text before anything else.
  if (const json* added = member(root, "added_tokens"); !isNullOrAbsent(added)) {
    if (!added->is_array()) return makeError(file + ": added_tokens is " + typeName(*added) + ", expected a list");
    if (added->size() > kMaxAddedTokens) {
      return makeError(file + ": added_tokens holds " + std::to_string(added->size()) + " tokens; at most " +
                       std::to_string(kMaxAddedTokens) + " are supported");
    }
    std::set<std::string> seen;
    for (std::size_t k = 0; k < added->size(); ++k) {
      const json& a = (*added)[k];
      const std::string where = file + ": added_tokens[" + std::to_string(k) + "]";
      if (!a.is_object()) return makeError(where + " is " + typeName(a) + ", expected an object");
      const json* content = member(a, "content");
      const json* idj = member(a, "id");
      if (content == nullptr || !content->is_string() || content->get_ref<const std::string&>().empty()) {
        return makeError(where + ".content is missing or empty");
      }
      if (idj == nullptr) return makeError(where + ".id is missing");
      auto id = tokenIdValue(*idj, where + ".id");
      if (!id) return id.error();
      const std::string text = content->get<std::string>();
      for (const char* flag : {"single_word", "lstrip", "rstrip"}) {
        auto v = optionalBool(a, flag, false, where);
        if (!v) return v.error();
        if (*v) {
          return makeError(where + " " + shownText(text) + " sets " + flag + ", which is not supported");
        }
      }
      auto special = optionalBool(a, "special", false, where);
      if (!special) return special.error();
      if (!seen.insert(text).second) return makeError(where + ": " + shownText(text) + " is listed twice");
      if (const auto v = t.vocab_.find(text); v != t.vocab_.end() && v->second != *id) {
        return makeError(where + ": " + shownText(text) + " has id " + std::to_string(*id) + " but the vocabulary gives it " +
                         std::to_string(v->second));
      }
      auto [it, fresh] = t.entries_.try_emplace(*id);
      if (fresh) {
        ++t.addedOnly_;
      } else if (it->second.text != text) {
        return makeError(where + ": id " + std::to_string(*id) + " of " + shownText(text) + " is already " +
                         shownText(it->second.text));
      } else if (it->second.added) {
        return makeError(where + ": id " + std::to_string(*id) + " is listed twice");
      }
      it->second.text = text;
      it->second.bytes = text;  // an added token decodes to its content as written
      it->second.special = *special;
      it->second.added = true;
      t.added_.push_back(AddedToken{*id, text, *special});
    }
  }

  auto nfc = readNormalizer(member(root, "normalizer"), file);
  if (!nfc) return nfc.error();
  t.nfc_ = *nfc;
  auto steps = readPreTokenizer(member(root, "pre_tokenizer"), file);
  if (!steps) return steps.error();
  t.steps_ = std::move(*steps);
  if (auto st = checkDecoder(member(root, "decoder"), file); !st) return st.error();

  // The post-processor: only the BOS a template puts first is read; the rest adds nothing to a
  // single text. Processors that would add other tokens are refused.
  if (const json* post = member(root, "post_processor"); !isNullOrAbsent(post)) {
    std::vector<const json*> processors{post};
    const json* ptype = post->is_object() ? member(*post, "type") : nullptr;
    if (ptype != nullptr && ptype->is_string() && ptype->get<std::string>() == "Sequence") {
      processors.clear();
      const json* list = member(*post, "processors");
      if (list == nullptr || !list->is_array()) return makeError(file + ": post_processor.processors is missing or not a list");
      for (const json& p : *list) processors.push_back(&p);
    }
    for (const json* p : processors) {
      const json* type = p->is_object() ? member(*p, "type") : nullptr;
      const std::string kind = (type != nullptr && type->is_string()) ? type->get<std::string>() : "";
      if (kind == "ByteLevel") continue;
      if (kind != "TemplateProcessing") {
        return makeError(file + ": post_processor " + (kind.empty() ? shown(*p) : quote(replaceInvalidUtf8(kind))) +
                         " is not supported (ByteLevel or TemplateProcessing)");
      }
      const json* single = member(*p, "single");
      if (single == nullptr || !single->is_array()) return makeError(file + ": post_processor.single is missing or not a list");
      for (std::size_t k = 0; k < single->size(); ++k) {
        const json& piece = (*single)[k];
        const json* sp = piece.is_object() ? member(piece, "SpecialToken") : nullptr;
        if (sp == nullptr) {
          if (piece.is_object() && member(piece, "Sequence") != nullptr) continue;
          return makeError(file + ": post_processor.single[" + std::to_string(k) + "] " + shown(piece) +
                           " is neither a SpecialToken nor the Sequence");
        }
        const json* name = sp->is_object() ? member(*sp, "id") : nullptr;
        if (name == nullptr || !name->is_string()) return makeError(file + ": post_processor.single[" + std::to_string(k) + "] has no token name");
        if (k != 0) {
          return makeError(file + ": post_processor adds " + shown(*name) +
                           " after the text, which is not supported (only a BOS before it)");
        }
        const auto id = t.tokenId(name->get<std::string>());
        if (!id) return makeError(file + ": post_processor's " + shown(*name) + " is not a token of this tokenizer");
        // The template inserts its special_tokens entry's ids: they must be that one token's id.
        const json* specials = member(*p, "special_tokens");
        const json* entry = specials != nullptr && specials->is_object() ? member(*specials, name->get<std::string>().c_str()) : nullptr;
        if (entry != nullptr) {
          const json* ids = entry->is_object() ? member(*entry, "ids") : nullptr;
          const bool same = ids != nullptr && ids->is_array() && ids->size() == 1 && (*ids)[0].is_number_integer() &&
                            (*ids)[0].get<std::int64_t>() == *id;
          if (!same) {
            return makeError(file + ": post_processor.special_tokens[" + shown(*name) + "].ids is " +
                             (ids != nullptr ? shown(*ids) : std::string("missing")) + ", but " + shown(*name) +
                             " is token " + std::to_string(*id) + " of this tokenizer: the two must agree");
          }
        }
        t.bos_ = *id;
      }
    }
  }
  if (auto st = t.finish(file); !st) return st.error();
  return t;
}

}  // namespace mhascope::tokenize
