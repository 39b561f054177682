// SPDX-License-Identifier: Apache-2.0
// Megatron Core's pipeline_model_parallel_layout: which layers each virtual pipeline stage holds, read as
// megatron/core/transformer/pipeline_parallel_layer_layout.py reads it (PipelineParallelLayerLayout,
// parse_str_to_list at :282-321 and the list form at :25-84 of 2a75ac12; the file is the same at every
// profile but one line shorter at 24bad8e6 and d48bd6be). The string form: 'E' the embedding, 't' a
// transformer decoder layer, 'm' a multi-token-prediction layer, 'L' the loss (output layer and
// cross-entropy), '|' between stages, "X*N" and "(...)*N" repeat, ',' is cosmetic:
// "Et|(tt|)*30mL" is [E t] [t t] x 30 [m L]. The list form names the same kinds (LayerType: embedding,
// decoder, mtp, loss). Stage i of the flat list is virtual chunk i / PP of pipeline rank i % PP; what the
// stages must hold (the embedding first, the loss last, num_layers decoder layers ...) is the rules'
// (R47-R49) and model_shape.h's (pipelineStage), not the parser's.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace rs {

// The layer kinds of a layout, as the string form spells them (LayerType in
// megatron/core/transformer/enums.py).
inline constexpr char kLayoutEmbedding = 'E';
inline constexpr char kLayoutDecoder = 't';
inline constexpr char kLayoutMtp = 'm';
inline constexpr char kLayoutLoss = 'L';

// The most layers (of every kind) a layout may expand to: the deepest model the estimate takes (kMaxLayers in
// model_shape.h) with its embedding, loss and MTP layers, and room to spare. Python would try to build any
// size; a bound keeps "t*999999999" from taking the memory of the process.
inline constexpr std::size_t kMaxLayoutLayers = 1u << 18;

// Text that is no layout; what() says what is allowed (the reader adds the field and where it came from).
struct PipelineLayoutError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

struct PipelineLayout {
    // One string of layer kinds per virtual stage, in Megatron's flat order (possibly empty: a stage may hold
    // nothing).
    std::vector<std::string> stages;

    std::size_t count(char kind) const; // layers of one kind over every stage
    std::size_t count(char kind, std::size_t stage) const;
    // The flat order of layers (stage 0's, then stage 1's ...): the order the model runs them in.
    std::string flat() const;
};

// The string form, unrolled as parse_str_to_list does: commas dropped, then every "(...)*N" (innermost
// parentheses only: nested ones are not unrolled, as Python's regular expression leaves them), then every
// "X*N" (X any one character, '|' included), then split at '|'. Throws PipelineLayoutError for a character
// that is no layer kind once unrolled, a layout without any layer, or one larger than kMaxLayoutLayers.
PipelineLayout parsePipelineLayout(const std::string& text);
// The list form: one list of LayerType names per stage, each name stripped of blanks and compared in lower
// case as __init__ does ("embedding", "decoder", "mtp", "loss"; "encoder" is a LayerType Megatron refuses
// in a layout, validate_layer_layout's NotImplementedError).
PipelineLayout pipelineLayoutFromNames(const std::vector<std::vector<std::string>>& stages);
// The string form of a layout, stages joined by '|' (parsePipelineLayout reads it back to the same stages).
std::string pipelineLayoutText(const PipelineLayout& layout);

} // namespace rs
