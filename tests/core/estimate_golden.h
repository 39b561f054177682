// SPDX-License-Identifier: Apache-2.0
// The estimator's whole term table as text, for golden files (tst_estimator_golden): every recompute
// choice of a recipe, every pipeline stage, every phase, every term with its bytes. One line a term, so a
// change to one term reads as one changed line in a diff.
#pragma once

#include <sstream>
#include <string>

#include "core/comparison.h"
#include "core/estimator.h"
#include "core/rules.h"

namespace rs::golden {

inline std::string estimateTable(const Recipe& recipe, Layout layout)
{
    std::ostringstream out;
    const Recipe resolved = validate(recipe).resolved;
    for (const RecomputeChoice& choice : recomputeChoices(resolved)) {
        const Recipe candidate = validate(candidateRecipe(resolved, choice)).resolved;
        const MemoryEstimate e = estimateMemory(candidate, layout);
        out << "choice " << choiceSpelling(choice) << ": peak " << e.peak_bytes << " (stage "
            << (e.ranks.empty() ? -1 : e.ranks[static_cast<size_t>(e.hottest)].stage) << ")\n";
        for (const RankEstimate& rank : e.ranks) {
            out << "  stage " << rank.stage << " [" << rank.scope << "] in flight "
                << rank.in_flight_micro_batches << ": peak " << rank.peak_bytes << " in " << rank.peak_phase
                << "\n";
            for (const PhaseEstimate& phase : rank.phases) {
                out << "    " << phase.phase << " " << phase.peak_bytes << "\n";
                for (const MemoryTerm& t : phase.terms)
                    out << "      " << t.category << " | " << t.name << " | " << t.bytes << "\n";
            }
        }
    }
    return out.str();
}

} // namespace rs::golden
