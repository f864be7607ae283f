// The loader's internal half: the public one (detect_format, load_model, load_tokenizer,
// LoadedModel) is ferrum/loader.h. Every format ferrum opens is read here: GGUF files, Hugging
// Face directories, llama2.c checkpoints (converted to GGUF) and BERT encoders; the models area
// only builds a model from a config and its weights (models/registry.h).
#pragma once

#include <memory>
#include <string>

#include "ferrum/loader.h"
#include "ferrum/model.h"
#include "ferrum/tokenizer.h"
#include "formats/gguf.h"
#include "formats/model_config_gguf.h"
#include "models/bert_model.h"
#include "models/registry.h"
#include "models/weights.h"

namespace ferrum {

// The config and weights only (no tokenizer, no model construction), for `ferrum info`.
struct ModelFiles {
  ModelConfig config;
  WeightSet weights;
  ModelFormat format;
  std::shared_ptr<const gguf::File> gguf;  // set for GGUF sources
};
ModelFiles open_model_files(const std::string& path, const std::string& tokenizer_path = "");

// Path of llama2.c's tokenizer for a checkpoint: explicit, else tokenizer.bin / tok<N>.bin beside it.
std::string llama2c_tokenizer_path(const std::string& checkpoint, const std::string& explicit_path);

// The tensors of a GGUF file, left in its read-only mapping (kept alive by the WeightSet).
WeightSet weights_from_gguf(std::shared_ptr<const gguf::File> f);

// Config + weights from a Hugging Face directory, under GGUF tensor names; q/k/v and gate/up
// are fused into single matrices at load.
struct HfModel {
  ModelConfig config;
  WeightSet weights;
};
HfModel load_hf_dir(const std::string& dir);

// Encoders (loading/encoder.cpp): a GGUF file (general.architecture = bert) or a Hugging Face
// BertModel directory (with or without the "bert." tensor prefix; vocab.txt or tokenizer.json;
// sentence-transformers modules.json decides the default pooling and normalization, kept in the
// config). load_model() comes here for an encoder.
LoadedModel load_encoder(const std::string& path, const ModelOptions& opts);

// A Hugging Face BERT directory converted by ferrum's converter into a temporary GGUF (unlinked
// at once; it lives on in the mapping): weights, WordPiece vocabulary, bert.pooling_type.
std::shared_ptr<const gguf::File> bert_hf_as_gguf(const std::string& dir);

// What a model's files ask for (for `ferrum info`): pooling and whether vectors are normalized.
struct BertDefaults {
  Pooling pooling = Pooling::Mean;
  bool normalize = false;
};
BertDefaults bert_defaults(const std::string& path);

}  // namespace ferrum
