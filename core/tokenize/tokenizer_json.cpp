// Hugging Face's tokenizer.json, read from bytes (untrusted): a BPE model, byte-level or
// SentencePiece style, with its normalizer, pre-tokenizer, decoder, added tokens and the BOS of its
// post-processor. Every refusal is one line that names the file, the place in it and the problem.
//
// [SECTION] pre-tokenizer, normalizer, decoder readers, SentencePiece token bytes
// [SECTION] model, merges, added tokens, post-processor (BOS)
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include "tokenize/bpe_tokenizer.hpp"
#include "tokenize/byte_level.hpp"
#include "tokenize/text_utf8.hpp"
#include "tokenize/tokenizer_load_common.hpp"

namespace mhascope::tokenize {

using namespace load_detail;

namespace {

// [SECTION] pre-tokenizer, normalizer, decoder readers, SentencePiece token bytes

// A Split's or Replace's pattern {"String": "…"}; a regex pattern is refused with `regexNote`.
Result<std::string> literalPattern(const json& obj, const std::string& where, const std::string& regexNote) {
  const json* pattern = member(obj, "pattern");
  if (pattern == nullptr) return makeError(where + ".pattern is missing");
  const json* text = pattern->is_object() ? member(*pattern, "String") : nullptr;
  if (text == nullptr || !text->is_string()) {
    if (pattern->is_object() && member(*pattern, "Regex") != nullptr) return makeError(where + ".pattern " + shown(*pattern) + " " + regexNote);
    return makeError(where + ".pattern is " + shown(*pattern) + ", expected {\"String\": …} or {\"Regex\": …}");
  }
  if (text->get_ref<const std::string&>().empty()) return makeError(where + ".pattern.String is empty");
  return text->get<std::string>();
}

Result<PreTokenizerStep> readSplit(const json& p, const std::string& at) {
  PreTokenizerStep step;
  const json* pattern = member(p, "pattern");
  const json* regex = (pattern != nullptr && pattern->is_object()) ? member(*pattern, "Regex") : nullptr;
  const json* behavior = member(p, "behavior");
  if (behavior == nullptr || !behavior->is_string()) {
    return makeError(at + ".behavior is " + (behavior ? shown(*behavior) : std::string("missing")) +
                     ", expected one of \"Removed\", \"Isolated\", \"MergedWithPrevious\", \"MergedWithNext\", \"Contiguous\"");
  }
  const std::string how = behavior->get<std::string>();
  auto invert = optionalBool(p, "invert", false, at);
  if (!invert) return invert.error();
  if (*invert) return makeError(at + ": an inverted Split (invert: true) is not supported");
  if (regex == nullptr) {
    auto text = literalPattern(p, at, "is not supported");
    if (!text) return text.error();
    step.kind = PreTokenizerStep::Kind::SplitText;
    step.text = *text;
    const std::pair<const char*, SplitBehavior> behaviors[] = {
        {"Removed", SplitBehavior::Removed},
        {"Isolated", SplitBehavior::Isolated},
        {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
        {"MergedWithNext", SplitBehavior::MergedWithNext},
        {"Contiguous", SplitBehavior::Contiguous}};
    for (const auto& [name, value] : behaviors) {
      if (how == name) {
        step.behavior = value;
        return step;
      }
    }
    return makeError(at + ".behavior " + shown(*behavior) +
                     " is not one of \"Removed\", \"Isolated\", \"MergedWithPrevious\", \"MergedWithNext\", \"Contiguous\"");
  }
  if (!regex->is_string()) return makeError(at + ".pattern.Regex is " + typeName(*regex) + ", expected a string");
  step.kind = PreTokenizerStep::Kind::Split;
  const std::string source = regex->get<std::string>();
  bool known = false;
  for (SplitRegex r : {SplitRegex::Gpt2, SplitRegex::Llama3, SplitRegex::Qwen2, SplitRegex::O200k,
                       SplitRegex::DeepSeekDigits, SplitRegex::DeepSeekCjk, SplitRegex::DeepSeekWords}) {
    if (source == splitRegexPattern(r)) {
      step.regex = r;
      known = true;
    }
  }
  if (!known) {
    return makeError(at + ": the Split regex " + shownText(source) +
                     " is not one this tokenizer implements (the GPT-2, Llama-3, Qwen2, o200k and DeepSeek-V3 regexes)");
  }
  if (how != "Isolated") return makeError(at + ": Split behavior " + shown(*behavior) + " is not supported with a regex (only \"Isolated\")");
  return step;
}

Result<PreTokenizerStep> readMetaspace(const json& p, const std::string& at) {
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::Metaspace;
  auto replacement = stringMember(p, "replacement", at);
  if (!replacement) return replacement.error();
  if (replacement->empty() || decodeAll(*replacement).cps.size() != 1) {
    return makeError(at + ".replacement " + shownText(*replacement) + " is not one character");
  }
  step.text = *replacement;
  // prepend_scheme is newer than add_prefix_space; older files have only the latter.
  const json* scheme = member(p, "prepend_scheme");
  if (!isNullOrAbsent(scheme)) {
    const std::string name = scheme->is_string() ? scheme->get<std::string>() : "";
    if (name == "always") {
      step.prepend = PrependScheme::Always;
    } else if (name == "first") {
      step.prepend = PrependScheme::First;
    } else if (name == "never") {
      step.prepend = PrependScheme::Never;
    } else {
      return makeError(at + ".prepend_scheme is " + shown(*scheme) + ", expected \"always\", \"first\" or \"never\"");
    }
  } else {
    auto prefix = optionalBool(p, "add_prefix_space", true, at);
    if (!prefix) return prefix.error();
    step.prepend = *prefix ? PrependScheme::Always : PrependScheme::Never;
  }
  auto split = optionalBool(p, "split", true, at);
  if (!split) return split.error();
  step.split = *split;
  return step;
}

// The steps of a normalizer, pre-tokenizer or decoder: a Sequence's list (under `listKey`), else
// the one object, each with its place for messages ("t.json: decoder.decoders[2]").
struct Steps {
  std::vector<const json*> items;
  std::vector<std::string> places;
};

Result<Steps> sequenceSteps(const json& obj, const char* listKey, const std::string& where) {
  Steps s;
  const json* type = member(obj, "type");
  if (type != nullptr && type->is_string() && type->get<std::string>() == "Sequence") {
    const json* items = member(obj, listKey);
    if (items == nullptr || !items->is_array()) return makeError(where + "." + listKey + " is missing or not a list");
    for (std::size_t k = 0; k < items->size(); ++k) {
      s.items.push_back(&(*items)[k]);
      s.places.push_back(where + "." + listKey + "[" + std::to_string(k) + "]");
    }
  } else {
    s.items.push_back(&obj);
    s.places.push_back(where);
  }
  return s;
}

// The pre-tokenizer's steps (none when it is absent). A ByteLevel step, which must be the last,
// makes the tokenizer byte-level.
Result<std::vector<PreTokenizerStep>> readPreTokenizer(const json* pre, const std::string& file) {
  const std::string where = file + ": pre_tokenizer";
  if (isNullOrAbsent(pre)) return std::vector<PreTokenizerStep>{};
  if (!pre->is_object()) return makeError(where + " is " + typeName(*pre) + ", expected an object");
  auto seq = sequenceSteps(*pre, "pretokenizers", where);
  if (!seq) return seq.error();
  const std::vector<const json*>& list = seq->items;
  const std::vector<std::string>& places = seq->places;
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
      auto split = readSplit(p, at);
      if (!split) return split.error();
      step = *split;
    } else if (kind == "Metaspace") {
      auto meta = readMetaspace(p, at);
      if (!meta) return meta.error();
      step = *meta;
    } else if (kind == "Digits") {
      step.kind = PreTokenizerStep::Kind::Digits;
      auto individual = optionalBool(p, "individual_digits", false, at);
      if (!individual) return individual.error();
      step.individualDigits = *individual;
    } else {
      return makeError(at + ": pre-tokenizer '" + replaceInvalidUtf8(kind) +
                       "' is not supported (ByteLevel, Metaspace, Split with a known regex or a text, Digits)");
    }
    steps.push_back(step);
  }
  bool metaspace = false, byteLevel = false;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].kind == PreTokenizerStep::Kind::ByteLevel && k + 1 != steps.size()) {
      return makeError(places[k] + ": ByteLevel must be the last pre-tokenizer (the splits before it work on text)");
    }
    metaspace = metaspace || steps[k].kind == PreTokenizerStep::Kind::Metaspace;
    byteLevel = byteLevel || steps[k].kind == PreTokenizerStep::Kind::ByteLevel;
  }
  if (metaspace && byteLevel) {
    return makeError(where + " has both Metaspace and ByteLevel steps: a tokenizer is byte-level or SentencePiece style, not both");
  }
  return steps;
}

// No normalizer, NFC (Qwen2), Prepend, Replace of a text, or a Sequence of those.
Status readNormalizer(const json* norm, const std::string& where, std::vector<NormalizerStep>& steps) {
  if (isNullOrAbsent(norm)) return Ok{};
  if (!norm->is_object()) return makeError(where + " is " + shown(*norm) + ", expected an object");
  const json* type = member(*norm, "type");
  if (type == nullptr || !type->is_string()) return makeError(where + " has no \"type\"");
  const std::string kind = type->get<std::string>();
  NormalizerStep step;
  if (kind == "Sequence") {
    auto seq = sequenceSteps(*norm, "normalizers", where);
    if (!seq) return seq.error();
    for (std::size_t k = 0; k < seq->items.size(); ++k) {
      if (auto st = readNormalizer(seq->items[k], seq->places[k], steps); !st) return st;
    }
    return Ok{};
  }
  if (kind == "NFC") {
    step.kind = NormalizerStep::Kind::Nfc;
  } else if (kind == "Prepend") {
    step.kind = NormalizerStep::Kind::Prepend;
    auto text = stringMember(*norm, "prepend", where);
    if (!text) return text.error();
    step.content = *text;
  } else if (kind == "Replace") {
    step.kind = NormalizerStep::Kind::Replace;
    auto pattern = literalPattern(*norm, where, "is not supported (only a Replace of a text)");
    if (!pattern) return pattern.error();
    auto content = stringMember(*norm, "content", where);
    if (!content) return content.error();
    step.pattern = *pattern;
    step.content = *content;
  } else {
    return makeError(where + " " + quote(replaceInvalidUtf8(kind)) +
                     " is not supported (NFC, Prepend, Replace of a text: another would change the text in ways this "
                     "tokenizer does not implement)");
  }
  steps.push_back(step);
  return Ok{};
}

// What the decoder says about turning a SentencePiece-style token back into text.
struct SpDecoding {
  std::string replacement;     // the token text read as a space ("▁"), empty for none
  bool byteFallback = false;   // "<0xNN>" tokens are their byte
  std::size_t stripStart = 0;  // leading spaces removed from the joined text
  std::size_t stripStop = 0;   // trailing spaces likewise
};

// Byte-level tokenizers decode with ByteLevel (or no decoder); SentencePiece-style ones with a
// Metaspace decoder or a Sequence of Replace (the replacement → " "), ByteFallback, Fuse, Strip.
Result<SpDecoding> readDecoder(const json* dec, bool byteLevel, const std::string& file) {
  const std::string where = file + ": decoder";
  SpDecoding d;
  if (isNullOrAbsent(dec)) {
    if (byteLevel) return d;
    return makeError(where + " is missing; a tokenizer without a ByteLevel pre-tokenizer needs one to say how its tokens "
                     "read back (Metaspace, or Replace '▁' → ' ' with ByteFallback, Fuse and Strip)");
  }
  const json* type = dec->is_object() ? member(*dec, "type") : nullptr;
  const std::string kind = (type != nullptr && type->is_string()) ? type->get<std::string>() : "";
  if (kind.empty()) return makeError(where + " " + shown(*dec) + " has no \"type\"");
  if (byteLevel) {
    if (kind == "ByteLevel") return d;
    return makeError(where + " " + quote(replaceInvalidUtf8(kind)) +
                     " is not supported with a ByteLevel pre-tokenizer (byte-level BPE decodes with ByteLevel)");
  }
  if (kind == "ByteLevel") {
    return makeError(where + " 'ByteLevel' needs a ByteLevel pre-tokenizer, and pre_tokenizer has none");
  }
  if (kind == "Metaspace") {
    auto meta = readMetaspace(*dec, where);
    if (!meta) return meta.error();
    d.replacement = meta->text;
    d.stripStart = meta->prepend == PrependScheme::Never ? 0 : 1;
    return d;
  }
  auto seq = sequenceSteps(*dec, "decoders", where);
  if (!seq) return seq.error();
  const std::vector<const json*>& list = seq->items;
  const std::vector<std::string>& places = seq->places;
  // The order that makes the joined text the sum of each token's: replace, bytes, join, strip.
  int stage = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const json& p = *list[k];
    const std::string& at = places[k];
    const json* t = p.is_object() ? member(p, "type") : nullptr;
    const std::string step = (t != nullptr && t->is_string()) ? t->get<std::string>() : "";
    int order = 0;
    if (step == "Replace") {
      auto pattern = literalPattern(p, at, "is not supported (only a Replace of a text)");
      if (!pattern) return pattern.error();
      auto content = stringMember(p, "content", at);
      if (!content) return content.error();
      if (*content != " " || !d.replacement.empty()) {
        return makeError(at + ": Replace " + shownText(*pattern) + " → " + shownText(*content) +
                         " is not supported (one Replace of the space marker with ' ')");
      }
      d.replacement = *pattern;
      order = 1;
    } else if (step == "ByteFallback") {
      d.byteFallback = true;
      order = 2;
    } else if (step == "Fuse") {
      order = 3;
    } else if (step == "Strip") {
      auto content = stringMember(p, "content", at);
      if (!content) return content.error();
      if (*content != " ") return makeError(at + ": Strip of " + shownText(*content) + " is not supported (only of ' ')");
      for (const char* key : {"start", "stop"}) {
        const json* n = member(p, key);
        if (n == nullptr || !n->is_number_unsigned() || n->get<std::uint64_t>() > 64) {
          return makeError(at + "." + key + " is " + (n ? shown(*n) : std::string("missing")) + ", expected a count 0 … 64");
        }
        (std::string(key) == "start" ? d.stripStart : d.stripStop) = n->get<std::size_t>();
      }
      order = 4;
    } else {
      return makeError(at + " " + (step.empty() ? shown(p) : quote(replaceInvalidUtf8(step))) +
                       " is not supported (SentencePiece-style BPE decodes with Metaspace, or Replace, ByteFallback, "
                       "Fuse and Strip)");
    }
    if (order <= stage) return makeError(at + " '" + step + "' comes out of order (Replace, ByteFallback, Fuse, Strip, each once)");
    stage = order;
  }
  return d;
}

// "<0x0A>" → 0x0A; nothing for any other text (the spelling Hugging Face's byte fallback uses:
// two upper-case hex digits).
std::optional<unsigned char> fallbackByte(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = digit(text[3]), lo = digit(text[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

// A SentencePiece-style token's text as the decoder reads it back: the replacement as a space,
// a <0xNN> token as its byte.
std::string spTokenBytes(const std::string& text, const SpDecoding& d) {
  if (d.byteFallback) {
    if (const auto b = fallbackByte(text)) return std::string(1, static_cast<char>(*b));
  }
  if (d.replacement.empty()) return text;
  std::string out;
  std::size_t pos = 0;
  for (std::size_t at; (at = text.find(d.replacement, pos)) != std::string::npos; pos = at + d.replacement.size()) {
    out.append(text, pos, at - pos);
    out += ' ';
  }
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace

// [SECTION] model, merges, added tokens, post-processor (BOS)

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
                     "' is not supported (BPE only)");
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
      return makeError(m + "." + key + " " + shown(*v) + " is not supported (a prefix or suffix BPE adds to word pieces)");
    }
  }
  auto byteFallback = optionalBool(*model, "byte_fallback", false, m);
  if (!byteFallback) return byteFallback.error();
  auto fuseUnk = optionalBool(*model, "fuse_unk", false, m);
  if (!fuseUnk) return fuseUnk.error();
  auto ignore = optionalBool(*model, "ignore_merges", false, m);
  if (!ignore) return ignore.error();
  t.ignoreMerges_ = *ignore;
  t.fuseUnk_ = *fuseUnk;

  // The text's way to the model, read first: whether the model's symbols are bytes or characters
  // decides how its vocabulary reads back.
  if (auto st = readNormalizer(member(root, "normalizer"), file + ": normalizer", t.normalizer_); !st) return st.error();
  auto steps = readPreTokenizer(member(root, "pre_tokenizer"), file);
  if (!steps) return steps.error();
  t.steps_ = std::move(*steps);
  t.byteLevel_ = !t.steps_.empty() && t.steps_.back().kind == PreTokenizerStep::Kind::ByteLevel;
  auto decoding = readDecoder(member(root, "decoder"), t.byteLevel_, file);
  if (!decoding) return decoding.error();
  t.stripStart_ = decoding->stripStart;
  t.stripStop_ = decoding->stripStop;
  // byte_fallback changes nothing in byte-level BPE, where every byte has a token already.
  t.byteFallback_ = *byteFallback && !t.byteLevel_;

  const json* vocab = member(*model, "vocab");
  if (vocab == nullptr) return makeError(m + ".vocab is missing");
  std::unordered_map<std::int32_t, std::string> idToSpelling;
  if (auto st = readVocab(*vocab, m + ".vocab", t.vocab_, idToSpelling); !st) return st.error();
  for (auto& [id, spelling] : idToSpelling) {
    Entry e;
    e.bytes = t.byteLevel_ ? vocabTextToBytes(spelling) : spTokenBytes(spelling, *decoding);
    e.text = std::move(spelling);
    t.entries_.emplace(id, std::move(e));
  }
  if (t.byteFallback_) {
    for (unsigned b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      const auto it = t.vocab_.find(name);
      if (it == t.vocab_.end()) {
        return makeError(m + ".byte_fallback is true, but the vocabulary has no token '" + std::string(name) +
                         "' (byte fallback needs all 256, <0x00> … <0xFF>)");
      }
      t.byteIds_[b] = it->second;
    }
  }
  // Byte-level BPE never needs the unknown token (every byte has one); some files name one anyway.
  if (const json* unk = member(*model, "unk_token"); !t.byteLevel_ && !isNullOrAbsent(unk)) {
    if (!unk->is_string()) return makeError(m + ".unk_token is " + typeName(*unk) + " " + shown(*unk) + ", expected a token or null");
    const auto it = t.vocab_.find(unk->get<std::string>());
    if (it == t.vocab_.end()) return makeError(m + ".unk_token " + shown(*unk) + " is not in the vocabulary");
    t.unk_ = it->second;
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
      auto pair = mergePair(item.get_ref<const std::string&>(), where);
      if (!pair) return pair.error();
      left = pair->first;
      right = pair->second;
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
      auto singleWord = optionalBool(a, "single_word", false, where);
      if (!singleWord) return singleWord.error();
      if (*singleWord) return makeError(where + " " + shownText(text) + " sets single_word, which is not supported");
      auto lstrip = optionalBool(a, "lstrip", false, where);
      if (!lstrip) return lstrip.error();
      auto rstrip = optionalBool(a, "rstrip", false, where);
      if (!rstrip) return rstrip.error();
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
      // Hugging Face's default: an added token is matched in the normalized text.
      auto normalized = optionalBool(a, "normalized", true, where);
      if (!normalized) return normalized.error();
      it->second.text = text;
      // An added token decodes to its content as written (SentencePiece style: as the decoder
      // reads every token, its "▁" a space).
      it->second.bytes = t.byteLevel_ ? text : spTokenBytes(text, *decoding);
      it->second.special = *special;
      it->second.added = true;
      t.added_.push_back(AddedToken{*id, text, *special, *lstrip, *rstrip});
      t.addedNormalized_.push_back(*normalized);
    }
  }

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
