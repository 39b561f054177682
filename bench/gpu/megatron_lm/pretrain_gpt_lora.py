# SPDX-License-Identifier: Apache-2.0
# pretrain_gpt.py's job (Megatron-LM d98e8a64) with Megatron Bridge's LoRA (peft/lora.py at 067f987d) applied
# the way Bridge's setup() applies it: a pre-wrap hook on the model config, which the model builder runs on
# the bare model chunks before Float16Module and DDP wrap them (Bridge: training/setup.py
# _create_peft_pre_wrap_hook; Megatron-LM: training/models/gpt.py build_distributed_models), so DDP builds
# its buffers for the adapters alone. The ground truth for the estimate's PEFT terms (issue 26).
#   LORA_TARGETS  comma-separated module names (peft.target_modules), default Bridge's four
#   LORA_DIM      peft.dim, default 32;  LORA_ALPHA  peft.alpha, default 32
# Run from the Megatron-LM folder (pretrain_gpt.py beside it) with megatron/bridge laid out by
# scripts/fetch_bridge_peft.sh; the arguments are pretrain_gpt.py's.
import os
import sys
import time

sys.path.insert(0, os.getcwd())

import pretrain_gpt as pg  # noqa: E402  (its __main__ block does not run on import)
from megatron.bridge.peft.lora import LoRA  # noqa: E402


def lora_hook():
    targets = os.environ.get("LORA_TARGETS", "linear_qkv,linear_proj,linear_fc1,linear_fc2").split(",")
    lora = LoRA(
        target_modules=[t for t in targets if t],
        dim=int(os.environ.get("LORA_DIM", "32")),
        alpha=int(os.environ.get("LORA_ALPHA", "32")),
    )

    def hook(model):
        model = lora(model, training=True)
        chunks = model if isinstance(model, list) else [model]
        trained = sum(p.numel() for m in chunks for p in m.parameters() if p.requires_grad)
        total = sum(p.numel() for m in chunks for p in m.parameters())
        print(f"> LoRA {lora.target_modules} dim {lora.dim}: {trained} of {total} parameters trained", flush=True)
        return model

    return hook


if __name__ == "__main__":
    main_entry = time.time()
    pg.set_startup_timestamps(program_start=pg._PROGRAM_START_TIME, main_entry=main_entry)
    setattr(pg.train_valid_test_datasets_provider, "is_distributed", True)
    args = pg.parse_and_validate_args(args_defaults={"tokenizer_type": "GPT2BPETokenizer"})
    model_cfg = pg.gpt_config_from_args(args)
    model_cfg.pre_wrap_hooks.append(lora_hook())
    full_config = pg.pretrain_cfg_container_from_args(args, model_cfg)
    pg.pretrain(
        full_config,
        pg.train_valid_test_datasets_provider,
        pg.ModelType.encoder_or_decoder,
        pg.forward_step,
        get_embedding_ranks=pg.get_embedding_ranks,
    )
