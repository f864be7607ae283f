// The whole ferrum library API in one include. See docs/library.md.
#pragma once

#include "ferrum/chat.h"
#include "ferrum/dtype.h"
#include "ferrum/embeddings.h"
#include "ferrum/error.h"
#include "ferrum/kv_cache.h"
#include "ferrum/kv_types.h"
#include "ferrum/loader.h"
#include "ferrum/lora.h"
#include "ferrum/model.h"
#include "ferrum/model_config.h"
#include "ferrum/sampler.h"
#include "ferrum/tokenizer.h"
#include "ferrum/version.h"
