#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes resources/bridge/recipes-<commit8>.json: every recipe function of Megatron Bridge at one commit,
with the ConfigContainer each one builds (model provider fields, train / dataset / optimizer / ddp /
mixed-precision / tokenizer / comm-overlap / PEFT settings), the mixed-precision presets, and notes on what
Bridge's setup does with them.

Where the facts come from (nothing is copied; everything is read from the two git mirrors):
- Bridge (NVIDIA-NeMo/Megatron-Bridge) at BRIDGE_COMMIT: the recipe functions are the public top-level
  `def name() -> ConfigContainer` of src/megatron/bridge/{recipes,perf_recipes,diffusion/recipes}/**.py
  (found with `ast`); scripts/performance/** is scanned the same way (it defines no recipe function at this
  commit, only override helpers that take a recipe as an argument).
- megatron.core / megatron.training: the Megatron-LM commit that Bridge pins in its 3rdparty/Megatron-LM
  submodule (read with `git ls-tree`; FALLBACK_MLM_COMMIT if the pin is missing from the mirror).
- Values: the two trees are exported with `git archive` to a temporary folder and each recipe function is
  *executed* there, in a child `python3 -S` (no site-packages at all) whose import hook answers every
  third-party import (torch, transformer_engine, transformers, numpy, ...) with inert stand-ins: torch dtypes
  are named sentinels, classes are empty subclassable stand-ins, modules report version "99.0.0" (torch
  "2.8.0"). Bridge's and megatron.core's own dataclasses (ConfigContainer, the model providers,
  TransformerConfig, OptimizerConfig, DistributedDataParallelConfig, MixedPrecisionConfig, ...) are the real
  ones, so defaults, inheritance and __post_init__ effects are Bridge's own.
  Only the packages imported unconditionally are stubbed; optional ones (apex, flash_attn, wandb, ...) stay
  absent, so the code takes its own "not installed" path for them.
- Hugging Face, recorded: when resources/bridge/hf-configs.json holds values for the model id a recipe asks for
  (`AutoBridge.from_hf_pretrained(id)`, `transformers.AutoConfig.from_pretrained(id)` and its sub-configs such as
  `.text_config`), the config loader is answered with a stand-in config object carrying those values (the
  file's `transformers_defaults` first, then its `config`; a sub-config's the same way, key by key), shaped
  as transformers 5.x presents a loaded config (see `v5_attributes`), and Bridge's own AutoBridge / model-bridge
  code (`provider_bridge`, `CONFIG_MAPPING`, `hf_config_to_model_config`, ...) builds the real provider from it.
  Each such recipe entry names the file entry (`hf_config`), its `confirmed` flag (`hf_config_confirmed`), the
  keys the conversion read and the keys it probed that the data lacks (`hf_config_use`). A key the data lacks reads as absent
  (AttributeError), as it would for a transformers config class that does not declare it.
- Hugging Face, not modelled: an hf-configs.json entry's `architecture_not_modelled` (the layer kind its Bridge
  conversion builds that the estimate does not, the class that has it, where that was read) is copied onto
  every recipe entry of that model id as `not_modelled` (for a recipe that stopped on an unresolved HF value,
  the id that value names).
- Hugging Face, not recorded: `AutoBridge.from_hf_pretrained(id, ...)` / `from_hf_config` / `from_auto_config`
  and every model bridge's `provider_bridge(hf)` cannot read a config.json here (no network, no HF cache), so
  they return a recording placeholder: the fields the recipe sets on it are kept, everything else (and the
  provider class, which AutoBridge picks from the HF architecture) is listed as unresolved with the model id
  and revision. Nothing is guessed:
  * a field the recipe reads but did not set gets a value only when no file of Bridge's HF-conversion code
    (src/megatron/bridge/models/**, src/megatron/bridge/diffusion/** outside recipes) names it (as an assigned
    attribute, a keyword argument or a string) and every Bridge model-config class has the same default
    for it; that value is listed in `model_unset_fields_read_as_class_default`;
  * any other such value is an "unresolved" stand-in: arithmetic keeps it unresolved; a truth test or
    comparison on it is explored both ways (the recipe runs once per combination, at most 32), and fields
    whose values differ between the runs are listed under `conditional` with the outcome that gives each
    value; integer use, len(), iteration or hashing stop that run (reported under `variants_failed` or
    `error`). `x is None` / isinstance() / hasattr() tests on such a value cannot be intercepted (they see
    "not None", "not a str", "present"); the recipe modules, perf_recipes/_common.py, perf_recipes/*/common.py
    and utils/cuda_graph.py were read for such tests at this commit, and the ones found there are on
    fields every provider has with non-None values (cuda_graph_impl/cuda_graph_scope/cuda_graph_modules)
    or only raise when the HF value is None (qwen_vl/common.py, vocab_size). Helpers elsewhere were not read.

usage: scripts/gen_bridge_recipe_table.py [--bridge-git DIR] [--mlm-git DIR] [--out FILE] [--hf-configs FILE]
                                         [--only REGEX]
"""
import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile

BRIDGE_COMMIT = "067f987df03b8355b03192d88d70f1709fedf51a"
FALLBACK_MLM_COMMIT = "2a75ac12c54ba6a42b34024756820bf819a2e25f"  # the project's "bridge-pin" profile
DEFAULT_BRIDGE_GIT = "/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo"
DEFAULT_MLM_GIT = "/work/.mirror/NVIDIA+Megatron-LM/repo"
RECIPE_ROOTS = (
    "src/megatron/bridge/recipes/",
    "src/megatron/bridge/perf_recipes/",
    "src/megatron/bridge/diffusion/recipes/",
)
SCANNED_ONLY_ROOTS = ("scripts/performance/",)

# Kind of each recipe family (the folder under recipes/ or perf_recipes/). Text = a language model trained on
# tokens only. A family not listed here is "other"; a "text" recipe whose model gets vision settings
# (e.g. freeze_vision_model) is reported as "vision" instead (see child `kind_of`).
FAMILY_KIND = {
    "deepseek": "text", "exaone": "text", "gemma": "text", "glm": "text", "glm_moe_dsa": "text",
    "gpt": "text", "gpt_oss": "text", "kimi": "text", "llama": "text", "minimax": "text",
    "moonlight": "text", "nemotronh": "text", "olmoe": "text", "qwen": "text", "stepfun": "text",
    "ministral3": "text",
    "gemma3_vl": "vision", "gemma4_vl": "vision", "glm_vl": "vision", "kimi_vl": "vision",
    "nemotron_vl": "vision", "qwen_vl": "vision",
    "qwen2_audio": "audio",
    "qwen_omni": "other", "nemotron_omni": "other",
    "wan": "diffusion", "flux": "diffusion", "nemotron_labs_diffusion": "diffusion",
}


def git(git_dir, *args, check=True):
    r = subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {git_dir}: {r.stderr.strip()}")
    return r.stdout


def object_exists(git_dir, commit):
    r = subprocess.run(["git", "--git-dir", git_dir, "cat-file", "-t", commit], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "commit"


def pinned_mlm_commit(bridge_git, bridge_commit):
    out = git(bridge_git, "ls-tree", bridge_commit, "3rdparty/Megatron-LM", check=False).split()
    if len(out) >= 3 and out[1] == "commit":
        return out[2]
    return None


def export_tree(git_dir, commit, paths, dest):
    os.makedirs(dest, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", git_dir, "archive", commit, *paths], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {commit} {paths} failed: {archive.stderr.decode()[:500]}")
    subprocess.run(["tar", "-x", "-C", dest], input=archive.stdout, check=True)


def list_recipe_functions(bridge_git, commit):
    """(module, function, path, line, return annotation) of each public top-level `-> ConfigContainer`
    function, plus the compatibility aliases (`from X import f as g`) recipe modules define."""
    files = git(bridge_git, "ls-tree", "-r", "--name-only", commit).splitlines()
    recipes, aliases, scanned = [], [], []
    for path in sorted(files):
        if not path.endswith(".py"):
            continue
        in_recipes = path.startswith(RECIPE_ROOTS)
        if not in_recipes and not path.startswith(SCANNED_ONLY_ROOTS):
            continue
        tree = ast.parse(git(bridge_git, "show", f"{commit}:{path}"))
        module = path[len("src/"):-len(".py")].replace("/", ".") if path.startswith("src/") else None
        if module and module.endswith(".__init__"):
            module = module[: -len(".__init__")]
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                ann = ast.unparse(node.returns).strip("'\"") if node.returns else ""
                if ann != "ConfigContainer":
                    continue
                args = node.args
                required = (len(args.posonlyargs) + len(args.args) - len(args.defaults)
                            + sum(1 for d in args.kw_defaults if d is None))
                if in_recipes:
                    recipes.append({"module": module, "name": node.name, "path": path,
                                    "line": node.lineno, "required_args": required})
                else:
                    scanned.append(f"{path}:{node.lineno} {node.name}")
            elif in_recipes and isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("megatron.bridge."):
                for a in node.names:
                    if a.asname and a.asname != a.name and not a.asname.startswith("_"):
                        aliases.append({"alias": a.asname, "target": a.name, "target_module": node.module,
                                        "module": module, "source": f"{path}:{node.lineno}"})
    return recipes, aliases, scanned


def hf_settable_names(bridge_git, commit):
    """Names that Bridge's HF conversion code could give a provider: every attribute assigned, keyword passed
    or identifier-like string constant in src/megatron/bridge/models/** and src/megatron/bridge/diffusion/**
    (class-level field declarations excepted; those are provider defaults, compared separately)."""
    names = set()
    files = git(bridge_git, "ls-tree", "-r", "--name-only", commit).splitlines()
    for path in files:
        if not path.endswith(".py") or not path.startswith(("src/megatron/bridge/models/",
                                                            "src/megatron/bridge/diffusion/")):
            continue
        if "/recipes/" in path:
            continue
        tree = ast.parse(git(bridge_git, "show", f"{commit}:{path}"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", node.value):
                names.add(node.value)
    return sorted(names)


def family_of(path):
    for root in RECIPE_ROOTS:
        if path.startswith(root):
            rest = path[len(root):].split("/")
            return rest[0] if len(rest) > 1 else os.path.splitext(rest[0])[0]
    return None


def setup_semantics(bridge_git, commit):
    """Plain-language notes on Bridge's setup, each with the file:line it was read from (found by text)."""
    def find(path, pattern, nth=0):
        text = git(bridge_git, "show", f"{commit}:{path}").splitlines()
        hits = [i + 1 for i, line in enumerate(text) if re.search(pattern, line)]
        return f"{path}:{hits[nth]}" if len(hits) > nth else f"{path}:?"

    cfg = "src/megatron/bridge/training/config.py"
    mp = "src/megatron/bridge/training/mixed_precision.py"
    setup = "src/megatron/bridge/training/setup.py"
    tcfg = "src/megatron/bridge/models/transformer_config.py"
    gpt = "src/megatron/bridge/models/gpt_provider.py"
    tok = "src/megatron/bridge/training/tokenizers/config.py"
    return [
        "Recipe functions only build a ConfigContainer; nothing below has run on the values in `recipes` "
        "(they are as the function returns them, before setup).",
        f"runtime_config_update ({find(cfg, r'^def runtime_config_update')}) runs, in order: environment "
        "variables, mixed precision, set_data_parallel_size, CommOverlapConfig.finalize()+setup(), validate().",
        f"Mixed precision ({find(cfg, r'cfg.mixed_precision = get_mixed_precision_config')}): a string "
        f"`mixed_precision` is looked up by name among the presets ({find(mp, r'^def get_mixed_precision_config')}; "
        "'-' is read as '_'), then MixedPrecisionConfig.finalize() (fp8_param/fp4_param default to "
        f"fp8_param_gather/fp4_param_gather, {find(mp, r'    def finalize')}) and setup(model, optimizer, ddp) "
        f"({find(mp, r'    def setup')}).",
        f"MixedPrecisionConfig.setup ({find(mp, r'^def update_config_with_precision_overrides')}): for every field "
        "of MixedPrecisionConfig that the target config also has (hasattr), the target's value is overwritten "
        "with the preset's value whenever they differ, for the model provider, the OptimizerConfig and the "
        "DistributedDataParallelConfig alike; `mixed_precision_targets` lists, per target class, the fields "
        "this copies (computed with hasattr on default instances). Recipe-set values of those fields on "
        "model/optimizer/ddp are therefore replaced by the mixed-precision config's (False/None values such as "
        "fp8=None included) whenever mixed_precision is not None.",
        f"MixedPrecisionConfig.__setattr__ keeps fp8_param and fp8_param_gather (and fp4_param/"
        f"fp4_param_gather) equal whenever either is assigned ({find(mp, r'    def __setattr__')}).",
        f"Data parallel size ({find(cfg, r'    def get_data_parallel_size')}): DP = world_size // (TP * PP * CP); "
        "world_size must be divisible by TP*PP*CP (expert parallelism is not in the divisor). It is stored on the "
        "container and copied to comm_overlap.data_parallel_size.",
        f"Model finalize ({find(tcfg, r'    def finalize')}): Bridge defers megatron.core TransformerConfig."
        "__post_init__ until finalize(); before calling it, finalize sets pipeline_dtype = params_dtype when "
        "PP > 1 and pipeline_dtype is None, turns sequence_parallel off when TP <= 1, sets "
        "expert_tensor_parallel_size = 1 when it is None and EP > 1 (megatron.core would use TP), and for the "
        "flex/HybridEP dispatcher without CUDA graphs turns on the HybridEP padding fields. Derived values "
        "(ffn_hidden_size = 4*hidden when unset, kv_channels = hidden/heads, num_query_groups = heads, ...) come "
        "from megatron.core's __post_init__ at the pinned Megatron-LM commit.",
        f"validate() ({find(cfg, r'    def validate')}) finalizes dataset, ddp, optimizer and model configs, "
        f"then syncs the distributed optimizer flag: if ddp.use_distributed_optimizer or "
        "optimizer.use_distributed_optimizer is True both become True, and likewise overlap_param_gather "
        f"({find(cfg, r'^def _validate_and_sync_distributed_optimizer_settings')}). It requires "
        "model.seq_length == dataset.seq_length for GPT/SFT dataset configs and seq_length divisible by 2*CP when "
        "CP > 1; for SFT datasets with CP > 1 it requires calculate_per_token_loss=True and "
        "average_in_collective=False.",
        f"Vocabulary ({find(setup, r'cfg.model.vocab_size, cfg.model.should_pad_vocab = _validate_and_set_vocab_size')}"
        f", {find(setup, r'^def _validate_and_set_vocab_size')}): after the tokenizer is built, if "
        "tokenizer.use_tokenizer_vocab_size is True or model.vocab_size is None, model.vocab_size = the "
        "tokenizer's vocab size and model.should_pad_vocab = True; otherwise model.vocab_size is kept (it must "
        "be >= the tokenizer's) and should_pad_vocab = False. NullTokenizer's vocab size is "
        "tokenizer.vocab_size as given.",
        f"Vocab padding ({find(gpt, r'if self.should_pad_vocab')}, "
        f"{find('src/megatron/bridge/models/hybrid/hybrid_provider.py', r'if self.should_pad_vocab')}; "
        "megatron/training/models/gpt.py for get_model_config() configs): when should_pad_vocab, the embedding/output "
        "size is ceil(vocab_size / (make_vocab_size_divisible_by * TP)) * (make_vocab_size_divisible_by * TP) "
        "with the MODEL's make_vocab_size_divisible_by (megatron/training/vocab_utils.py at the pinned "
        f"Megatron-LM); else vocab_size is used as is. TokenizerConfig.make_vocab_size_divisible_by defaults "
        f"to 1 ({find(tok, r'make_vocab_size_divisible_by: int = 1')}) and does not pad the model.",
        "Recipes that set `cfg.model.should_pad_vocab = True` (e.g. the perf recipes) still pass through the "
        "setup rule above, which recomputes should_pad_vocab from the tokenizer and model vocab.",
    ]


# ---------------------------------------------------------------------------------------------------------
# Child: runs under `python3 -S` inside the exported trees. Everything below uses the standard library only.
# ---------------------------------------------------------------------------------------------------------

CHILD_STUB_ROOTS = [
    # The third-party packages that Bridge / megatron.core / the recipe modules import unconditionally at
    # module level (found by running the imports). Optional packages (apex, flash_attn, wandb, deep_ep, ...)
    # are left out on purpose, so the code's own "not installed" path is taken for them.
    "torch", "numpy", "packaging", "typing_extensions", "triton", "transformers", "safetensors", "rich",
    "transformer_engine", "yaml", "omegaconf", "filelock", "einops", "datasets", "PIL", "diffusers", "tqdm",
    "modelopt", "megatron.energon",
]

CHILD_SOURCE = r'''
import abc, copy, dataclasses, enum, functools, importlib, importlib.abc, importlib.machinery, io, json
import logging, math, os, re, sys, traceback, types, typing, warnings

spec = json.load(open(sys.argv[1]))
sys.path[:] = [spec["bridge_src"], spec["mlm_root"]] + [p for p in sys.path if p and "site-packages" not in p]
logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")
if not hasattr(typing, "override"):      # megatron.training uses typing.override (Python 3.12)
    typing.override = lambda f: f

STUB_ROOTS = set(spec["stub_roots"])
_REG = {}


def _dunder(n):
    return n.startswith("__") and n.endswith("__")


class StubMeta(type(typing.Protocol)):
    """Metaclass of the stand-in classes: any attribute is another stand-in, calling a pure stand-in with
    one function/class returns it (decorators), anything else returns a stand-in object."""
    def __getattr__(cls, name):
        if _dunder(name):
            raise AttributeError(name)
        return stub_class(cls.__qualname__ + "." + name)

    def __call__(cls, *args, **kwargs):
        if cls.__dict__.get("_pure_stub"):
            if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type, functools.partial)):
                return args[0]
            return StubObj()
        return super().__call__(*args, **kwargs)

    def __repr__(cls):
        return "<stub %s>" % cls.__qualname__

    def register(cls, *a, **k):
        return a[0] if a else None

    def __iter__(cls):
        return iter(())

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls


class StubBase(metaclass=StubMeta):
    def __init__(self, *a, **k):
        pass

    def __init_subclass__(cls, **kw):
        pass

    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        return StubObj()


def stub_class(qual):
    c = _REG.get(qual)
    if c is None:
        name = qual.rsplit(".", 1)[-1]
        c = StubMeta(name, (StubBase,), {"_pure_stub": True, "__qualname__": qual,
                                         "__module__": qual.rsplit(".", 1)[0]})
        _REG[qual] = c
    return c


class StubObj:
    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        return StubObj()

    def __setattr__(self, k, v):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]
        return StubObj()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __getitem__(self, k):
        return StubObj()

    def __repr__(self):
        return "<stub object>"


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        ga = self.__dict__.get("_ga")
        if ga is not None:
            return ga(name)
        full = self.__name__ + "." + name
        if full in sys.modules:
            return sys.modules[full]
        return stub_class(full)


class TorchDtype:
    is_floating_point = True

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (getattr, (sys.modules["torch"], self.name))

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


class Version:
    """Orders version strings by their numeric release part (pre-releases before the release)."""
    def __init__(self, s):
        self.s = str(s)
        m = re.match(r"\s*v?(\d+(?:\.\d+)*)", self.s)
        parts = [int(x) for x in m.group(1).split(".")] if m else []
        parts += [0] * (3 - len(parts))
        pre = re.search(r"(dev|a|b|rc)\d*", self.s[m.end():] if m else "")
        self.key = (tuple(parts), 0 if pre else 1)
        self.major, self.minor, self.micro = parts[0], parts[1], parts[2]
        self.release = tuple(parts)
        self.base_version = ".".join(str(p) for p in parts)
        self.public = self.s

    def _k(self, o):
        return o.key if isinstance(o, Version) else Version(o).key

    def __lt__(self, o): return self.key < self._k(o)
    def __le__(self, o): return self.key <= self._k(o)
    def __gt__(self, o): return self.key > self._k(o)
    def __ge__(self, o): return self.key >= self._k(o)
    def __eq__(self, o): return self.key == self._k(o)
    def __hash__(self): return hash(self.key)
    def __str__(self): return self.s


def build_torch(m):
    m.__version__ = "2.8.0"
    m.dtype = TorchDtype
    for n in ["bfloat16", "float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64",
              "bool", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "complex64", "uint16", "uint32"]:
        setattr(m, n, TorchDtype(n))
    m.half, m.float, m.double, m.long, m.int, m.short = m.float16, m.float32, m.float64, m.int64, m.int32, m.int16


def build_torch_cuda(m):
    m.is_available = lambda: False
    m.device_count = lambda: 0
    m.is_bf16_supported = lambda *a, **k: False


def build_torch_distributed(m):
    m.is_initialized = lambda: False
    m.is_available = lambda: True
    m.get_rank = lambda *a, **k: 0
    m.get_world_size = lambda *a, **k: 1


def build_packaging_version(m):
    m.Version = Version
    m.parse = Version
    m.InvalidVersion = type("InvalidVersion", (ValueError,), {})


def build_typing_extensions(m):
    def ga(name):
        if hasattr(typing, name):
            return getattr(typing, name)
        if name in ("deprecated",):
            return lambda *a, **k: (lambda f: f)
        return stub_class("typing_extensions." + name)
    m._ga = ga


BUILDERS = {"torch": build_torch, "torch.cuda": build_torch_cuda, "torch.distributed": build_torch_distributed,
            "packaging.version": build_packaging_version, "typing_extensions": build_typing_extensions}
STUBBED_SEEN = set()


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        parts = fullname.split(".")
        if parts[0] not in STUB_ROOTS and ".".join(parts[:2]) not in STUB_ROOTS:
            return None
        STUBBED_SEEN.add(parts[0] if parts[0] in STUB_ROOTS else ".".join(parts[:2]))
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        m = StubModule(spec.name)
        m.__path__ = []
        m.__version__ = "99.0.0"
        return m

    def exec_module(self, module):
        b = BUILDERS.get(module.__name__)
        if b:
            b(module)


sys.meta_path.insert(0, Finder())
os.environ.setdefault("WORLD_SIZE", "1")

# ------------------------------------------------------------------ placeholders for Hugging Face configs


class UnresolvedUse(Exception):
    pass


MAX_BRANCH_POINTS = 12
BRANCH = {"replay": [], "trace": [], "walking": False}


def decide(desc):
    """A recipe branches on a value only a HF config knows: take the outcome the explorer asks for (True
    first), and record it; run_variants() then runs the recipe again for the other outcome."""
    if BRANCH["walking"]:
        raise UnresolvedUse("branch on " + desc)
    trace = BRANCH["trace"]
    if len(trace) >= MAX_BRANCH_POINTS:
        raise UnresolvedUse("more than %d branches on HF-config values" % MAX_BRANCH_POINTS)
    i = len(trace)
    v = BRANCH["replay"][i] if i < len(BRANCH["replay"]) else True
    trace.append([desc, v])
    return v


class Unresolved:
    """A value that only a Hugging Face config.json could supply. Arithmetic keeps it unresolved; a branch
    on it (truth value or comparison) is explored both ways; integer use, iteration and hashing stop the
    recipe (reported, never guessed)."""
    def __init__(self, why):
        object.__setattr__(self, "why", why)

    def _op(self, *o):
        return Unresolved(self.why)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _op
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __neg__ = __getitem__ = _op

    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        return Unresolved(self.why + "." + name)

    def __call__(self, *a, **k):
        return Unresolved(self.why + "()")

    def __bool__(self):
        return decide(self.why + " is truthy")

    def _cmp(op):
        def f(self, o):
            other = o.why if isinstance(o, Unresolved) else repr(o)
            return UnresolvedCond("%s %s %s" % (self.why, op, other))
        return f

    __eq__, __ne__, __lt__, __le__, __gt__, __ge__ = (_cmp("=="), _cmp("!="), _cmp("<"), _cmp("<="),
                                                      _cmp(">"), _cmp(">="))

    def __hash__(self):
        raise UnresolvedUse("hashing " + self.why)

    def __index__(self):
        raise UnresolvedUse("integer use of " + self.why)

    __int__ = __float__ = __index__

    def __iter__(self):
        raise UnresolvedUse("iteration over " + self.why)

    def __contains__(self, x):
        raise UnresolvedUse("membership test in " + self.why)

    def __len__(self):
        raise UnresolvedUse("len() of " + self.why)

    def __repr__(self):
        return "<unresolved:%s>" % self.why

    __str__ = __repr__

    def __deepcopy__(self, memo):
        return self


class UnresolvedCond(Unresolved):
    def __bool__(self):
        return decide(self.why)


class HFProvider:
    """Stands for the provider AutoBridge would build from a Hugging Face config: records assignments."""
    def __init__(self, source):
        object.__setattr__(self, "_hf", source)
        object.__setattr__(self, "_set", {})
        object.__setattr__(self, "_reads", [])
        object.__setattr__(self, "_defaults_used", {})

    def __setattr__(self, k, v):
        self.__dict__["_set"][k] = v

    def __getattr__(self, k):
        if _dunder(k) or k in ("_hf", "_set", "_reads", "_defaults_used"):
            raise AttributeError(k)
        d = self.__dict__
        if k in d["_set"]:
            return d["_set"][k]
        if k.startswith("to_") and k.endswith("_provider"):      # e.g. a VLM provider's to_text_provider()
            src = dict(d["_hf"])
            src["method"] = (src.get("method") or "") + "()." + k if src.get("method") else k

            def derived(*a, **kw):
                return HFProvider(src)
            return derived
        known = class_default_for_unset(k)
        if known is not NO_DEFAULT:
            d["_defaults_used"][k] = known[1]
            return known[0]
        if k not in d["_reads"]:
            d["_reads"].append(k)
        return Unresolved("model.%s from HF config %s" % (k, d["_hf"]["id"]))

    def __deepcopy__(self, memo):
        new = HFProvider(self.__dict__["_hf"])
        new.__dict__["_set"].update(copy.deepcopy(self.__dict__["_set"], memo))
        new.__dict__["_reads"].extend(self.__dict__["_reads"])
        new.__dict__["_defaults_used"].update(self.__dict__["_defaults_used"])
        return new

    def finalize(self):
        pass


NO_DEFAULT = object()
HF_SETTABLE = set(spec["hf_settable"])
_UNIVERSE = []
_CLASS_DEFAULT_CACHE = {}


def instance_or_field_defaults(cls):
    """{field: raw default} of a dataclass: from cls() when it constructs, else from the field defaults."""
    try:
        inst = cls()
        return {f.name: getattr(inst, f.name) for f in dataclasses.fields(cls) if hasattr(inst, f.name)}
    except Exception:
        res = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                res[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                try:
                    res[f.name] = f.default_factory()
                except Exception:
                    pass
        return res


def build_universe():
    """Every model-config dataclass Bridge defines (providers = megatron.core TransformerConfig subclasses,
    and megatron.training ModelConfig subclasses), with their defaults."""
    from megatron.training.models.base import ModelConfig
    seen = set()
    for modname in sorted(sys.modules):
        if not modname.startswith("megatron.bridge"):
            continue
        mod = sys.modules[modname]
        for name in sorted(getattr(mod, "__dict__", {})):
            c = mod.__dict__[name]
            try:
                if not isinstance(c, type) or id(c) in seen or c.__module__ != modname or \
                        not dataclasses.is_dataclass(c):
                    continue
                if not (issubclass(c, MCoreTC) or issubclass(c, ModelConfig)):
                    continue
            except Exception:       # stand-ins for uninstalled optional packages refuse most operations
                continue
            seen.add(id(c))
            _UNIVERSE.append((c, issubclass(c, ModelConfig), instance_or_field_defaults(c)))


def class_default_for_unset(k):
    """The value a field has on the provider AutoBridge builds when (1) no HF-conversion code in Bridge
    names it and (2) every Bridge model-config class declares it with the same default; else NO_DEFAULT."""
    if k in _CLASS_DEFAULT_CACHE:
        return _CLASS_DEFAULT_CACHE[k]
    res = NO_DEFAULT
    if k not in HF_SETTABLE and not k.startswith("_") and _UNIVERSE:
        vals = []
        ok = True
        for c, is_mc, defaults in _UNIVERSE:
            if k not in defaults:
                if is_mc:
                    continue          # delegated to the embedded transformer config
                ok = False
                break
            vals.append(defaults[k])
        if ok and vals:
            forms = []
            for v in vals:
                cv = fn_name(v) if callable(v) and not isinstance(v, (TorchDtype, enum.Enum, str)) else conv(v)
                forms.append(cv)
            if all(f is not SKIP for f in forms) and all(json.dumps(plain(f)) == json.dumps(plain(forms[0]))
                                                        for f in forms):
                res = (copy.deepcopy(vals[0]), forms[0])
    _CLASS_DEFAULT_CACHE[k] = res
    return res


class HFBridge:
    def __init__(self, source):
        self.source = source

    def to_megatron_provider(self, *a, **k):
        src = dict(self.source, method="to_megatron_provider")
        return HFProvider(src)

    def get_model_config(self, *a, **k):
        src = dict(self.source, method="get_model_config")
        return HFProvider(src)

    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        return Unresolved("AutoBridge(%s).%s" % (self.source["id"], name))


def _hf_id(path):
    return str(path)


# ------------------------------------------------------------------ HF configs recorded as data

HF_DATA = spec.get("hf_configs", {})
HF_USED = []        # stand-in configs created during the current recipe run (reset by run_once)
_STANDIN_CLS = []


class HFConfigPlaceholder:
    """What transformers.AutoConfig.from_pretrained(id) returns for a model without recorded values: remembers
    the id and the attribute path taken from it (e.g. `.text_config`) and the attributes a recipe sets."""
    def __init__(self, ident, revision=None, path=""):
        object.__setattr__(self, "_ident", ident)
        object.__setattr__(self, "_revision", revision)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_set", {})

    def __getattr__(self, name):
        if _dunder(name):
            raise AttributeError(name)
        if name in self.__dict__["_set"]:
            return self.__dict__["_set"][name]
        return HFConfigPlaceholder(self._ident, self._revision, self._path + "." + name)

    def __setattr__(self, k, v):
        self.__dict__["_set"][k] = v

    def __repr__(self):
        return "<HF config %s%s>" % (self._ident, self._path)


def v5_attributes(raw, default_theta):
    """The attributes a transformers 5.x config object has for config.json values `raw` (the rules of
    PreTrainedConfig.__post_init__ / RotaryEmbeddingConfigMixin at the transformers pin, applied as data):
    `torch_dtype` becomes `dtype`; `rope_scaling`, `rope_theta` (and `partial_rotary_factor`, which also stays an
    attribute) are folded into `rope_parameters`, whose `rope_type` defaults to its legacy `type` or "default".
    `rope_scaling` and `torch_dtype` stay readable as properties (see HFConfigStandIn)."""
    attrs = dict(raw)
    td = attrs.pop("torch_dtype", None)
    if attrs.get("dtype") is None and td is not None:
        attrs["dtype"] = td
    if isinstance(attrs.get("dtype"), str) and hasattr(sys.modules["torch"], attrs["dtype"]):
        attrs["dtype"] = getattr(sys.modules["torch"], attrs["dtype"])
    rs = attrs.pop("rope_scaling", None)
    rp = attrs.get("rope_parameters")
    rp = copy.deepcopy(rs) if rs else (copy.deepcopy(rp) if rp else {})
    theta = attrs.pop("rope_theta", default_theta)
    nested = bool(rp) and all(isinstance(v, dict) for v in rp.values())
    if not nested:
        if theta is not None:
            rp.setdefault("rope_theta", theta)
        if attrs.get("partial_rotary_factor") is not None:
            rp.setdefault("partial_rotary_factor", attrs["partial_rotary_factor"])
        if rp:
            rp.setdefault("rope_type", rp.get("type", "default"))
            for k in ("beta_fast", "beta_slow", "factor"):
                if isinstance(rp.get(k), (int, float)) and not isinstance(rp.get(k), bool):
                    rp[k] = float(rp[k])
    attrs["rope_parameters"] = rp if rp else None
    return attrs


def make_hf_config(ident, revision, path=""):
    """A stand-in transformers config carrying the recorded values of `ident` (resources/bridge/hf-configs.json),
    or None when none are recorded. Sub-configs (dict values whose key ends in `_config`) are stand-ins too."""
    data = HF_DATA.get(ident)
    if data is None:
        return None
    raw = dict(data.get("transformers_defaults") or {})
    for k, v in data["config"].items():
        # A sub-config's class defaults (e.g. text_config's layer_types) under the file's own values.
        if isinstance(v, dict) and k.endswith("_config") and isinstance(raw.get(k), dict):
            v = dict(raw[k], **v)
        raw[k] = v
    for part in [p for p in path.split(".") if p]:
        raw = raw.get(part)
        if not isinstance(raw, dict):
            return None
    cfg = HFConfigStandIn(ident, revision, data, raw, path)
    HF_USED.append(cfg)
    return cfg


def standin_class():
    """Subclass of the (stand-in) transformers PretrainedConfig, so Bridge's isinstance checks accept it."""
    if _STANDIN_CLS:
        return _STANDIN_CLS[0]
    import transformers
    base = transformers.PretrainedConfig
    _STANDIN_CLS.append(type("HFConfigStandIn", (HFConfigStandInMixin, base), {}))
    return _STANDIN_CLS[0]


def HFConfigStandIn(ident, revision, data, raw, path):
    return standin_class()(ident, revision, data, raw, path)


class HFConfigStandInMixin:
    def __init__(self, ident, revision, data, raw, path):
        attrs = v5_attributes({k: v for k, v in raw.items()
                               if not (isinstance(v, dict) and k.endswith("_config"))}, data.get("default_theta"))
        object.__setattr__(self, "_meta", {"id": ident, "revision": revision, "path": path,
                                           "confirmed": bool(data.get("confirmed")), "data_revision":
                                           data.get("revision"), "read": [], "absent": [], "set": {}})
        for k, v in attrs.items():
            object.__setattr__(self, k, v)
        for k, v in raw.items():
            if isinstance(v, dict) and k.endswith("_config"):
                sub = make_hf_config(ident, revision, (path + "." + k).lstrip("."))
                object.__setattr__(self, k, sub)
        object.__setattr__(self, "_keys", set(attrs) | {k for k, v in raw.items()
                                                         if isinstance(v, dict) and k.endswith("_config")})
        object.__setattr__(self, "_name_or_path", ident)

    def __getattribute__(self, name):
        if not name.startswith("_") and name in object.__getattribute__(self, "_keys"):
            read = object.__getattribute__(self, "_meta")["read"]
            if name not in read:
                read.append(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "rope_scaling":
            return self.rope_parameters
        if name == "torch_dtype":
            return getattr(self, "dtype", None)
        if name == "name_or_path":
            return self._name_or_path
        meta = object.__getattribute__(self, "_meta")
        if not name.startswith("_") and name not in meta["absent"]:
            meta["absent"].append(name)
        raise AttributeError(name)

    def __setattr__(self, k, v):
        if k == "rope_scaling":
            k = "rope_parameters"
        object.__getattribute__(self, "_meta")["set"][k] = v
        object.__getattribute__(self, "_keys").add(k)
        object.__setattr__(self, k, v)

    def __contains__(self, k):
        return k in object.__getattribute__(self, "_keys")

    def __iter__(self):
        return iter(sorted(object.__getattribute__(self, "_keys")))

    def to_dict(self):
        return {k: getattr(self, k) for k in object.__getattribute__(self, "_keys")}

    def get_text_config(self, *a, **k):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        m = object.__getattribute__(self, "_meta")
        return "<HF config %s%s (recorded values)>" % (m["id"], ("." + m["path"]) if m["path"] else "")


def fake_auto_config_from_pretrained(cls, path, *args, **kwargs):
    rev = kwargs.get("revision")
    rev = rev if isinstance(rev, str) else None
    cfg = make_hf_config(_hf_id(path), rev)
    return cfg if cfg is not None else HFConfigPlaceholder(_hf_id(path), rev)


def fake_from_hf_pretrained(cls, path, *args, **kwargs):
    rev = kwargs.get("revision")
    rev = rev if isinstance(rev, str) else None
    cfg = make_hf_config(_hf_id(path), rev)
    if cfg is not None:
        # Bridge's own from_hf_pretrained runs; only its config loader is answered with the recorded values.
        AB_MODULE.safe_load_config_with_retry = lambda *a, **k: cfg
        try:
            return ORIG["from_hf_pretrained"](path, *args, **kwargs)
        finally:
            AB_MODULE.safe_load_config_with_retry = ORIG["safe_load_config_with_retry"]
    return HFBridge({"id": _hf_id(path), "revision": rev, "call": "AutoBridge.from_hf_pretrained"})


def fake_from_hf_config(cls, config, *args, **kwargs):
    if isinstance(config, standin_class()):
        return ORIG["from_hf_config"](config, *args, **kwargs)
    if isinstance(config, HFConfigPlaceholder):
        return HFBridge({"id": config._ident, "revision": config._revision,
                         "call": "AutoConfig.from_pretrained(...)%s -> AutoBridge.from_hf_config" % config._path})
    return HFBridge({"id": "<config object %s>" % type(config).__name__, "revision": None,
                     "call": "AutoBridge.from_hf_config"})


def fake_from_auto_config(cls, megatron_path, hf_model_id, *a, **k):
    return HFBridge({"id": str(hf_model_id), "revision": None, "call": "AutoBridge.from_auto_config"})


# ------------------------------------------------------------------ import Bridge and patch AutoBridge

out = {"errors": {}, "recipes": {}, "providers": {}, "provider_notes": {}, "presets": {}}
try:
    import megatron.bridge  # noqa
    from megatron.bridge.models.conversion.auto_bridge import AutoBridge
    import megatron.bridge.models.conversion.auto_bridge as AB_MODULE
    ORIG = {"from_hf_pretrained": AutoBridge.from_hf_pretrained, "from_hf_config": AutoBridge.from_hf_config,
            "safe_load_config_with_retry": AB_MODULE.safe_load_config_with_retry}
    import transformers as _tf
    _tf.AutoConfig.from_pretrained = classmethod(fake_auto_config_from_pretrained)
    AutoBridge.from_hf_pretrained = classmethod(fake_from_hf_pretrained)
    AutoBridge.from_hf_config = classmethod(fake_from_hf_config)
    AutoBridge.from_auto_config = classmethod(fake_from_auto_config)
    from megatron.bridge.training import mixed_precision as MP
    from megatron.bridge.training import comm_overlap as CO
    from megatron.bridge.training.config import ConfigContainer
    from megatron.core.transformer.transformer_config import TransformerConfig as MCoreTC
except Exception:
    out["fatal"] = traceback.format_exc()
    json.dump(out, open(spec["out"], "w"))
    sys.exit(0)

# ------------------------------------------------------------------ value conversion

DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}
SKIP = object()


def conv(v, depth=0):
    """JSON form of a simple value; SKIP for objects (modules, specs, process groups, ...)."""
    if v is None or isinstance(v, (bool, str)):
        if isinstance(v, str) and "<unresolved:" in v:
            return Unresolved(v)
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return repr(v)
        return v
    if isinstance(v, TorchDtype):
        return DTYPE_NAMES.get(v.name, v.name)
    if isinstance(v, Unresolved):
        return v
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, (list, tuple)) and depth < 3:
        items = [conv(x, depth + 1) for x in v]
        if any(x is SKIP for x in items):
            return SKIP
        return items
    if isinstance(v, dict) and depth < 3 and all(isinstance(k, str) for k in v):
        items = {k: conv(x, depth + 1) for k, x in v.items()}
        if any(x is SKIP for x in items.values()):
            return SKIP
        return items
    return SKIP


def fn_name(v):
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
        return v.__name__
    if isinstance(v, functools.partial):
        return fn_name(v.func)
    if isinstance(v, type) and v.__dict__.get("_pure_stub"):
        return v.__name__
    return SKIP


def has_unresolved(x):
    if isinstance(x, Unresolved):
        return True
    if isinstance(x, list):
        return any(has_unresolved(i) for i in x)
    if isinstance(x, dict):
        return any(has_unresolved(i) for i in x.values())
    return False


def plain(x):
    if isinstance(x, Unresolved):
        return "<unresolved>"
    if isinstance(x, list):
        return [plain(i) for i in x]
    if isinstance(x, dict):
        return {k: plain(i) for k, i in x.items()}
    return x


FUNCTION_FIELDS = ("activation_func",)


def field_value(obj, name):
    try:
        v = getattr(obj, name)
    except UnresolvedUse as e:
        return Unresolved(str(e))
    except Exception:
        return SKIP
    if isinstance(v, Unresolved):
        return v
    if callable(v) and not isinstance(v, (type(None), bool, int, float, str, TorchDtype, enum.Enum)):
        n = fn_name(v)
        if n is not SKIP and (name in FUNCTION_FIELDS or name.endswith("_func") or name.endswith("_fn")):
            return n
        if isinstance(v, (types.FunctionType, functools.partial)):
            return n
        return SKIP
    return conv(v)


def simple_fields(obj):
    res = {}
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            if f.name.startswith("_"):
                continue
            v = field_value(obj, f.name)
            if v is not SKIP:
                res[f.name] = v
    return res


# ------------------------------------------------------------------ provider defaults

def provider_key(cls):
    key = cls.__name__
    owner = out["provider_notes"].get(key)
    if owner is not None and owner["module"] != cls.__module__:
        key = cls.__module__ + "." + cls.__qualname__
    return key


_PROVIDER_DEFAULTS = {}


def provider_defaults(cls):
    if cls in _PROVIDER_DEFAULTS:
        return _PROVIDER_DEFAULTS[cls]
    key = provider_key(cls)
    note = {"module": cls.__module__}
    declared = {}
    for f in dataclasses.fields(cls):
        if f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            v = f.default
        elif f.default_factory is not dataclasses.MISSING:
            try:
                v = f.default_factory()
            except Exception:
                continue
        else:
            note.setdefault("required_fields", []).append(f.name)
            continue
        if callable(v) and not isinstance(v, (TorchDtype, enum.Enum, str)):
            n = fn_name(v)
            if n is SKIP:
                continue
            v = n
        else:
            v = conv(v)
        if v is not SKIP:
            declared[f.name] = v
    try:
        inst = cls()
        values = simple_fields(inst)
        note["defaults_from"] = "instance %s() (dataclass defaults + __post_init__)" % cls.__name__
        post = sorted(k for k in values if k in declared and plain(values[k]) != plain(declared[k]))
        post += sorted(k for k in values if k not in declared)
        if post:
            note["set_by_post_init"] = post
    except Exception as e:
        values = declared
        note["defaults_from"] = "dataclass field defaults (%s() failed: %s)" % (cls.__name__, str(e)[:200])
    mro = [c.__module__ + "." + c.__qualname__ for c in cls.__mro__
           if dataclasses.is_dataclass(c) and c is not cls]
    note["dataclass_bases"] = mro
    has_finalize = hasattr(cls, "finalize")
    note["finalize"] = ("megatron.core __post_init__ deferred to finalize() (Bridge TransformerConfig)"
                        if issubclass(cls, MCoreTC) and has_finalize else ("finalize()" if has_finalize else None))
    out["providers"][key] = values
    out["provider_notes"][key] = note
    _PROVIDER_DEFAULTS[cls] = (key, values)
    return key, values


# ------------------------------------------------------------------ walking one ConfigContainer

OPT_FIELDS = ["optimizer", "use_distributed_optimizer", "main_params_dtype", "main_grads_dtype", "exp_avg_dtype",
              "exp_avg_sq_dtype", "use_precision_aware_optimizer", "store_param_remainders", "bf16", "fp16",
              "params_dtype", "optimizer_cpu_offload", "optimizer_offload_fraction", "overlap_param_gather",
              "overlap_param_gather_with_optimizer_step", "lr", "min_lr", "weight_decay"]
DDP_FIELDS = ["grad_reduce_in_fp32", "use_distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather",
              "average_in_collective", "data_parallel_sharding_strategy", "use_megatron_fsdp",
              "num_distributed_optimizer_instances", "bucket_size", "fp8_param_gather",
              "reuse_grad_buf_for_mxfp8_param_ag", "check_for_nan_in_grad", "keep_fp8_transpose_cache",
              "nccl_ub", "fsdp_double_buffer", "outer_dp_sharding_strategy"]
TRAIN_FIELDS = ["global_batch_size", "micro_batch_size", "train_iters", "train_samples", "num_epochs"]
DATASET_FIELDS = ["seq_length", "enable_offline_packing", "enable_in_batch_packing",
                  "pad_to_max_length", "packed_sequence_size"]
TOKENIZER_FIELDS = ["tokenizer_type", "tokenizer_model", "vocab_size", "make_vocab_size_divisible_by",
                    "use_tokenizer_vocab_size"]


def pick(obj, names, section, unresolved):
    if obj is None:
        return None
    res = {"class": type(obj).__name__}
    for n in names:
        if not hasattr(type(obj), n) and not (dataclasses.is_dataclass(obj) and n in
                                               {f.name for f in dataclasses.fields(obj)}) \
                and n not in getattr(obj, "__dict__", {}):
            continue
        v = field_value(obj, n)
        if v is SKIP:
            continue
        if has_unresolved(v):
            unresolved.append("%s.%s: %s" % (section, n, v if isinstance(v, Unresolved) else "derived from HF config"))
            v = None
        res[n] = v
    return res


def comm_overlap_section(co, unresolved):
    if co is None:
        return None
    res = simple_fields(co)
    for k in [k for k, v in res.items() if has_unresolved(v)]:
        unresolved.append("comm_overlap.%s: %s" % (k, res[k] if isinstance(res[k], Unresolved)
                                                   else "derived from HF config"))
        res[k] = None
    cfg = getattr(co, "tp_comm_overlap_cfg", None)
    if cfg is not None:
        name = None
        for k in sorted(vars(CO)):
            if vars(CO)[k] is cfg:
                name = k
                break
        res["tp_comm_overlap_cfg"] = name or ("<%s>" % type(cfg).__name__)
    return res


def peft_section(p):
    if p is None:
        return None
    res = {"class": type(p).__name__}
    res.update(simple_fields(p))
    return res


def kind_of(base, model_fields):
    if base == "text" and any(re.search(r"(^|_)(vision|image|visual)(_|$)", k) for k in model_fields):
        return "vision"
    return base


def record_hf_configs(entry):
    """Which recorded HF configs the recipe's model was built from, and what Bridge read from them."""
    used = []
    for c in HF_USED:
        m = object.__getattribute__(c, "_meta")
        u = {"hf_config": "resources/bridge/hf-configs.json#" + m["id"] + (("." + m["path"]) if m["path"] else ""),
             "confirmed": m["confirmed"], "data_revision": m["data_revision"]}
        if m["revision"] is not None and m["revision"] != m["data_revision"]:
            u["recipe_revision_differs"] = m["revision"]
        u["keys_read"] = sorted(m["read"])
        if m["absent"]:
            u["keys_probed_absent"] = sorted(m["absent"])
        if m["set"]:
            u["set_by_recipe"] = sorted(m["set"])
        if u not in used:
            used.append(u)
    first = object.__getattribute__(HF_USED[0], "_meta")
    entry["hf_model"] = first["id"]
    entry["hf_revision"] = first["revision"]
    entry["hf_config"] = used[0]["hf_config"] if len(used) == 1 else [u["hf_config"] for u in used]
    entry["hf_config_confirmed"] = all(u["confirmed"] for u in used)
    entry["hf_config_use"] = used


def walk(cfg, entry):
    unresolved = []
    model = cfg.model
    m_out = {}
    if isinstance(model, HFProvider):
        src = model.__dict__["_hf"]
        entry["hf_model"] = src["id"]
        entry["hf_revision"] = src.get("revision")
        entry["provider"] = None
        entry["provider_via"] = src["call"] + ("(...)." + src["method"] + "()" if src.get("method") else "(...)")
        for k, v in model.__dict__["_set"].items():
            if k.startswith("_"):
                continue
            if isinstance(v, Unresolved):
                cv = v
            elif callable(v) and not isinstance(v, (TorchDtype, enum.Enum, str)):
                cv = fn_name(v)
            else:
                cv = conv(v)
            if cv is SKIP:
                continue
            if has_unresolved(cv):
                unresolved.append("model.%s: computed from HF config values" % k)
                continue
            m_out[k] = cv
        unresolved.insert(0, "model.*: provider class and every field not listed in `model` come from the HF "
                          "config of %s%s via %s" % (src["id"], ("@" + src["revision"]) if src.get("revision") else "",
                                                     entry["provider_via"]))
        reads = [r for r in model.__dict__["_reads"] if not r.startswith("_")]
        if reads:
            entry["hf_fields_read_by_recipe"] = reads
        used = model.__dict__["_defaults_used"]
        if used:
            entry["model_unset_fields_read_as_class_default"] = dict(sorted(used.items()))
    elif model is None:
        entry["provider"] = None
        unresolved.append("model: recipe returned cfg.model = None")
    else:
        cls = type(model)
        if dataclasses.is_dataclass(model):
            key, defaults = provider_defaults(cls)
            entry["provider"] = key
            vals = simple_fields(model)
            inner = getattr(model, "transformer", None)
            if "transformer" in {f.name for f in dataclasses.fields(model)} and dataclasses.is_dataclass(inner):
                # builder-backed ModelConfig (get_model_config()): its TransformerConfig fields are read through
                # it, so they are listed flat, against the defaults of the transformer config's class
                tkey, tdefaults = provider_defaults(type(inner))
                entry["provider"] = "%s(transformer=%s)" % (key, tkey)
                tvals = simple_fields(inner)
                defaults = dict(tdefaults, **defaults)
                vals = dict(tvals, **vals)
            for k, v in vals.items():
                if has_unresolved(v):
                    unresolved.append("model.%s: from HF config" % k)
                    continue
                if k not in defaults or plain(defaults[k]) != plain(v):
                    m_out[k] = v
            # sub-configs that hold HF-config placeholders (e.g. VLM language/vision sub-configs)
            for f in dataclasses.fields(model):
                sub = getattr(model, f.name, None)
                if isinstance(sub, HFProvider):
                    unresolved.append("model.%s: from HF config %s" % (f.name, sub.__dict__["_hf"]["id"]))
                    entry.setdefault("hf_model", sub.__dict__["_hf"]["id"])
        else:
            entry["provider"] = cls.__name__
            unresolved.append("model: %s is not a dataclass; fields not read" % cls.__name__)
    entry["model"] = m_out
    if HF_USED:
        record_hf_configs(entry)
    entry["train"] = pick(cfg.train, TRAIN_FIELDS, "train", unresolved)
    entry["dataset"] = pick(cfg.dataset, DATASET_FIELDS, "dataset", unresolved)
    specs = getattr(cfg.dataset, "offline_packing_specs", None) or getattr(cfg.dataset, "packed_sequence_specs", None)
    if specs is not None and entry["dataset"] is not None:
        ps = simple_fields(specs)
        for k in [k for k, v in ps.items() if has_unresolved(v)]:
            unresolved.append("dataset.packing_specs.%s: %s" % (k, ps[k] if isinstance(ps[k], Unresolved)
                                                                 else "derived from HF config"))
            ps[k] = None
        entry["dataset"]["packing_specs"] = ps
    entry["optimizer"] = pick(cfg.optimizer, OPT_FIELDS, "optimizer", unresolved)
    entry["ddp"] = pick(cfg.ddp, DDP_FIELDS, "ddp", unresolved)
    mp = cfg.mixed_precision
    if mp is None or isinstance(mp, str):
        entry["mixed_precision"] = mp
    else:
        entry["mixed_precision"] = simple_fields(mp)
        preset = None
        for name in sorted(MP.MIXED_PRECISION_RECIPES):
            if "-" in name:
                continue
            if json.dumps(plain(simple_fields(MP.MIXED_PRECISION_RECIPES[name]())), sort_keys=True) == \
                    json.dumps(plain(entry["mixed_precision"]), sort_keys=True):
                preset = name
                break
        entry["mixed_precision_equals_preset"] = preset
    entry["tokenizer"] = pick(cfg.tokenizer, TOKENIZER_FIELDS, "tokenizer", unresolved)
    tok = cfg.tokenizer
    if tok is not None and getattr(tok, "tokenizer_type", None) != "NullTokenizer":
        mv = model.__dict__["_set"].get("vocab_size", Unresolved("x")) if isinstance(model, HFProvider) \
            else getattr(model, "vocab_size", None)
        if getattr(tok, "use_tokenizer_vocab_size", False) or mv is None:
            unresolved.append("model.vocab_size: set at setup from the %s tokenizer %s (use_tokenizer_vocab_size=%s, "
                              "model vocab_size %s)" % (tok.tokenizer_type, tok.tokenizer_model,
                                                        tok.use_tokenizer_vocab_size,
                                                        "unset" if mv is None else "set"))
    entry["comm_overlap"] = comm_overlap_section(cfg.comm_overlap, unresolved)
    entry["peft"] = peft_section(getattr(cfg, "peft", None))
    entry["kind"] = kind_of(entry["kind"], list(m_out) + list(getattr(model, "__dict__", {}).get("_set", {}) or {}))
    entry["unresolved"] = unresolved


for modname in sorted({r["module"] for r in spec["recipes"]}):
    try:
        importlib.import_module(modname)
    except BaseException:
        out["errors"][modname] = traceback.format_exc()[-1500:]
build_universe()


def patch_model_bridges():
    """Recipes that call a model bridge's provider_bridge(hf_pretrained) directly (FLUX, the dLLM recipes)
    get the same placeholder as AutoBridge users: the HF config is not available here."""
    from megatron.bridge.models.conversion.model_bridge import MegatronModelBridge

    def placeholder(self, hf_pretrained, *a, **k):
        ident = getattr(hf_pretrained, "_model_name_or_path", None)
        return HFProvider({"id": str(ident) if ident is not None else "<unknown>", "revision": None,
                           "call": type(self).__name__ + "().provider_bridge", "method": None})

    def has_recorded_config(hf_pretrained):
        """True when the HF config handed to provider_bridge is a stand-in with recorded values (then Bridge's
        own provider_bridge runs); read without triggering a wrapper's lazy config load."""
        cfg = vars(hf_pretrained).get("_config", vars(hf_pretrained).get("config")) \
            if hasattr(hf_pretrained, "__dict__") else None
        if cfg is None and isinstance(hf_pretrained, standin_class()):
            cfg = hf_pretrained
        return isinstance(cfg, standin_class())

    def wrap(orig):
        def provider_bridge(self, hf_pretrained, *a, **k):
            if has_recorded_config(hf_pretrained):
                return orig(self, hf_pretrained, *a, **k)
            return placeholder(self, hf_pretrained, *a, **k)
        return provider_bridge

    todo, seen = [MegatronModelBridge], set()
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        if "provider_bridge" in c.__dict__:
            c.provider_bridge = wrap(c.__dict__["provider_bridge"])
        todo.extend(c.__subclasses__())


patch_model_bridges()

MAX_VARIANTS = 32
SECTIONS = ("provider", "hf_model", "hf_revision", "provider_via", "hf_config", "hf_config_confirmed",
            "hf_config_use", "model", "train", "dataset", "optimizer", "ddp",
            "mixed_precision", "mixed_precision_equals_preset", "tokenizer", "comm_overlap", "peft", "kind")


def error_text(e):
    tb = traceback.extract_tb(e.__traceback__)
    where = ["%s:%d" % (re.sub(r"^.*?/(megatron/)", r"\1", f.filename), f.lineno) for f in tb[-3:]
             if "child.py" not in f.filename]
    if isinstance(e, UnresolvedUse):
        return "needs a value from the HF config: %s (at %s)" % (e, " <- ".join(reversed(where)))
    return "%s: %s (at %s)" % (type(e).__name__, str(e)[:300], " <- ".join(reversed(where)))


def run_once(fn, kind, replay):
    BRANCH["replay"], BRANCH["trace"] = replay, []
    del HF_USED[:]
    entry = {"kind": kind}
    saved = sys.stdout
    sys.stdout = io.StringIO()
    try:
        cfg = fn()
    except BaseException as e:
        entry["error"] = error_text(e)
        cfg = None
    finally:
        sys.stdout = saved
    trace = [list(t) for t in BRANCH["trace"]]
    if cfg is not None:
        if not isinstance(cfg, ConfigContainer):
            entry["error"] = "returned %s, not a ConfigContainer" % type(cfg).__name__
        else:
            BRANCH["walking"] = True
            try:
                walk(cfg, entry)
            except BaseException as e:
                entry = {"kind": kind, "error": "reading the result: " + error_text(e)}
            finally:
                BRANCH["walking"] = False
    return trace, entry


def run_variants(fn, kind):
    """Runs the recipe once per combination of outcomes of its branches on HF-config values."""
    variants, replay = [], []
    while True:
        trace, entry = run_once(fn, kind, replay)
        variants.append((trace, entry))
        path = [v for _, v in trace]
        while path and path[-1] is False:
            path.pop()
        if not path:
            break
        if len(variants) >= MAX_VARIANTS:
            variants.append(([], {"error": "more than %d HF-dependent paths; stopped" % MAX_VARIANTS}))
            break
        path[-1] = False
        replay = path
    return variants


def flat(entry):
    res = {}
    for k in SECTIONS:
        if k not in entry:
            continue
        v = entry[k]
        if isinstance(v, dict):
            res[(k, None)] = "__dict__"
            for f, x in v.items():
                res[(k, f)] = x
        else:
            res[(k, None)] = v
    return res


def compact_conditions(opts):
    """Each option's `when` becomes the branch outcomes shared by all runs that gave that value, when those
    tell the options apart; otherwise the full list of runs (`when_runs`) is kept."""
    commons = []
    for o in opts:
        runs = o["when"]
        common = dict((c, v) for c, v in runs[0])
        for run in runs[1:]:
            d = dict((c, v) for c, v in run)
            common = {c: v for c, v in common.items() if d.get(c, not v) == v}
        commons.append(common)
    distinct = all(any(c in b and b[c] != v for c, v in a.items())
                   for i, a in enumerate(commons) for b in commons[i + 1:])
    for o, common in zip(opts, commons):
        runs = o.pop("when")
        if distinct:
            o["when"] = common
        else:
            o["when_runs"] = [dict((c, v) for c, v in run) for run in runs]


def merge_variants(variants, kind):
    if len(variants) == 1:
        return variants[0][1]
    ok = [(t, e) for t, e in variants if "error" not in e]
    bad = [(t, e) for t, e in variants if "error" in e]
    if not ok:
        entry = {"kind": kind, "error": bad[0][1]["error"]}
        entry["variants_failed"] = [{"when": dict((c, v) for c, v in t), "error": e["error"]} for t, e in bad]
        return entry
    flats = [flat(e) for _, e in ok]
    keys = []
    for f in flats:
        for k in f:
            if k not in keys:
                keys.append(k)
    MISSING = "<absent>"
    entry = {"kind": ok[0][1]["kind"]}
    conditional = {}
    for key in keys:
        vals = [f.get(key, MISSING) for f in flats]
        forms = [json.dumps(plain(v), sort_keys=True) for v in vals]
        sec, field = key
        if all(x == forms[0] for x in forms):
            if vals[0] is MISSING:
                continue
            if field is None:
                entry[sec] = {} if vals[0] == "__dict__" else vals[0]
            else:
                entry.setdefault(sec, {})
                if isinstance(entry[sec], dict):
                    entry[sec][field] = vals[0]
        else:
            name = sec if field is None else sec + "." + field
            if field is None and "__dict__" in vals:
                entry.setdefault(sec, {})
                if all(v in ("__dict__", MISSING) for v in vals):
                    continue
            opts = []
            for (t, _), v, fm in zip(ok, vals, forms):
                for o in opts:
                    if o["_form"] == fm:
                        o["when"].append(t)
                        break
                else:
                    opts.append({"_form": fm, "value": None if v is MISSING else v, "absent": v is MISSING,
                                 "when": [t]})
            for o in opts:
                del o["_form"]
                if not o["absent"]:
                    del o["absent"]
            compact_conditions(opts)
            conditional[name] = opts
    unresolved = []
    for _, e in ok:
        for u in e.get("unresolved", []):
            if u not in unresolved:
                unresolved.append(u)
    for name in conditional:
        unresolved.append("%s: differs with HF-config values the recipe branches on (see conditional)" % name)
    for k in ("hf_fields_read_by_recipe",):
        acc = []
        for _, e in ok:
            for x in e.get(k, []):
                if x not in acc:
                    acc.append(x)
        if acc:
            entry[k] = acc
    used = {}
    for _, e in ok:
        used.update(e.get("model_unset_fields_read_as_class_default", {}))
    if used:
        entry["model_unset_fields_read_as_class_default"] = dict(sorted(used.items()))
    entry["unresolved"] = unresolved
    entry["conditional"] = conditional
    entry["hf_branches"] = sorted({t[0] for tr, _ in variants for t in tr})
    if bad:
        entry["variants_failed"] = [{"when": dict((c, v) for c, v in t), "error": e["error"]} for t, e in bad]
        unresolved.append("some HF-config branch outcomes make the recipe fail (see variants_failed)")
    return entry


for r in spec["recipes"]:
    key = r["module"] + ":" + r["name"]
    try:
        fn = getattr(importlib.import_module(r["module"]), r["name"])
    except BaseException as e:
        out["recipes"][key] = {"kind": r["kind"], "error": "import: " + error_text(e)}
        continue
    out["recipes"][key] = merge_variants(run_variants(fn, r["kind"]), r["kind"])

for name in sorted(MP.MIXED_PRECISION_RECIPES):
    if "-" in name:
        continue
    try:
        out["presets"][name] = simple_fields(MP.MIXED_PRECISION_RECIPES[name]())
    except Exception as e:
        out["presets"][name] = {"error": str(e)[:200]}
out["mixed_precision_config_defaults"] = simple_fields(MP.MixedPrecisionConfig())
# Which MixedPrecisionConfig fields MixedPrecisionConfig.setup() copies onto each target (it copies a field
# when the target has an attribute of that name).
from megatron.bridge.training.config import OptimizerConfig as _Opt, DistributedDataParallelConfig as _DDP
from megatron.bridge.models.gpt_provider import GPTModelProvider as _GPT
from megatron.bridge.models.hybrid.hybrid_provider import HybridModelProvider as _Hyb
_mp_fields = [f.name for f in dataclasses.fields(MP.MixedPrecisionConfig)]
out["mixed_precision_targets"] = {}
for _label, _cls in (("GPTModelProvider", _GPT), ("HybridModelProvider", _Hyb), ("OptimizerConfig", _Opt),
                     ("DistributedDataParallelConfig", _DDP)):
    _inst = _cls()
    out["mixed_precision_targets"][_label] = [f for f in _mp_fields if hasattr(_inst, f)]
out["stubbed_packages"] = sorted(STUBBED_SEEN)
json.dump(out, open(spec["out"], "w"), sort_keys=False)
'''


def load_hf_configs(path):
    """{model id: {"revision", "config", "transformers_defaults", "default_theta", "confirmed"}} from
    resources/bridge/hf-configs.json (values collected by hand from published config.json files; see its
    entries' `sources`). Missing file: no model gets recorded values."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        doc = json.load(f)
    res = {}
    for ident, d in doc.items():
        if ident.startswith("_") or not isinstance(d, dict) or not isinstance(d.get("config"), dict):
            continue
        res[ident] = {k: d.get(k) for k in ("revision", "config", "transformers_defaults", "default_theta",
                                             "confirmed")}
    return res


def load_not_modelled(path):
    """{model id: architecture_not_modelled} from resources/bridge/hf-configs.json: the models whose Bridge
    conversion builds a layer kind the estimate does not (the layers in words, the class that has them, and
    where that was read), whether or not their config values are recorded."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        doc = json.load(f)
    return {ident: d["architecture_not_modelled"] for ident, d in doc.items()
            if not ident.startswith("_") and isinstance(d, dict)
            and isinstance(d.get("architecture_not_modelled"), dict)}


# An unresolved HF value names its model ("model.x from HF config <id>"): a recipe that stopped on one was
# building that model's architecture.
HF_ID_IN_ERROR_RE = re.compile(r"from HF config (\S+?)(?:@\S+)?(?=[\s>)]|$)")


def run_child(work, bridge_src, mlm_root, recipes, hf_settable, hf_configs):
    spec_path = os.path.join(work, "spec.json")
    out_path = os.path.join(work, "child-out.json")
    child_path = os.path.join(work, "child.py")
    with open(child_path, "w") as f:
        f.write(CHILD_SOURCE)
    with open(spec_path, "w") as f:
        json.dump({"bridge_src": bridge_src, "mlm_root": mlm_root, "out": out_path,
                   "stub_roots": CHILD_STUB_ROOTS, "recipes": recipes, "hf_settable": hf_settable,
                   "hf_configs": hf_configs}, f)
    run_dir = os.path.join(work, "cwd")
    os.makedirs(run_dir, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONHASHSEED": "0", "HOME": run_dir,
           "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C.UTF-8"}
    r = subprocess.run([sys.executable, "-S", "-s", child_path, spec_path], cwd=run_dir, env=env,
                       capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out_path):
        raise SystemExit(f"recipe runner failed (rc {r.returncode}):\n{r.stderr[-4000:]}")
    with open(out_path) as f:
        return json.load(f)


def reason_categories(e):
    """Groups of why a recipe entry is not fully resolved (a recipe can be in several)."""
    cats = []
    if "error" in e:
        cats.append("recipe raised here: " + re.sub(r" \(at .*\)$", "", e["error"])[:110])
    for u in e.get("unresolved", []):
        if u.startswith("*:"):
            continue
        if u.startswith("model.*"):
            c = "architecture (provider class, unset model fields) comes from a HF config"
        elif "set at setup from the" in u:
            c = "model vocab size comes from a HF tokenizer at setup (use_tokenizer_vocab_size / unset vocab)"
        elif "differs with HF-config values" in u:
            c = "some values depend on branches on HF-config values (see conditional)"
        elif "branch outcomes make the recipe fail" in u:
            c = "some HF-config branch outcomes make the recipe raise (see variants_failed)"
        elif "HF config" in u:
            c = "a non-model field copies a HF-config value (e.g. tokenizer.vocab_size = model.vocab_size)"
        else:
            c = "other: " + u.split(":")[0]
        if c not in cats:
            cats.append(c)
    return cats


GPUS_RE = re.compile(r"_(\d+)gpu(?:_|$)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bridge-git", default=DEFAULT_BRIDGE_GIT)
    ap.add_argument("--mlm-git", default=DEFAULT_MLM_GIT)
    ap.add_argument("--bridge-commit", default=BRIDGE_COMMIT)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None, help="regex: run only the recipe functions whose name matches "
                    "(for checking; the output then lists only those)")
    ap.add_argument("--hf-configs", default=None, help="recorded HF config values "
                    "(default resources/bridge/hf-configs.json)")
    args = ap.parse_args()
    bcommit = args.bridge_commit
    if not object_exists(args.bridge_git, bcommit):
        raise SystemExit(f"{bcommit} is not in {args.bridge_git}")
    pin = pinned_mlm_commit(args.bridge_git, bcommit)
    if pin and object_exists(args.mlm_git, pin):
        mcommit, mnote = pin, "the commit Bridge pins in 3rdparty/Megatron-LM"
    else:
        mcommit = FALLBACK_MLM_COMMIT
        mnote = (f"Bridge's pin {pin} is not in the Megatron-LM mirror; " if pin else
                 "Bridge has no 3rdparty/Megatron-LM pin; ") + "used the bridge-pin profile commit"
        if not object_exists(args.mlm_git, mcommit):
            raise SystemExit(f"{mcommit} is not in {args.mlm_git}")
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_path = args.out or os.path.join(repo_root, "resources", "bridge", f"recipes-{bcommit[:8]}.json")

    hf_configs_path = args.hf_configs or os.path.join(repo_root, "resources", "bridge", "hf-configs.json")
    hf_configs = load_hf_configs(hf_configs_path)
    not_modelled = load_not_modelled(hf_configs_path)
    recipes, aliases, scanned = list_recipe_functions(args.bridge_git, bcommit)
    if args.only:
        recipes = [r for r in recipes if re.search(args.only, r["name"])]
    for r in recipes:
        r["family"] = family_of(r["path"])
        r["kind"] = FAMILY_KIND.get(r["family"], "other")

    with tempfile.TemporaryDirectory(prefix="bridge-recipes-") as work:
        export_tree(args.bridge_git, bcommit, ["src"], os.path.join(work, "bridge"))
        export_tree(args.mlm_git, mcommit, ["megatron"], os.path.join(work, "mlm"))
        child = run_child(work, os.path.join(work, "bridge", "src"), os.path.join(work, "mlm"),
                          [{"module": r["module"], "name": r["name"], "kind": r["kind"]} for r in recipes],
                          hf_settable_names(args.bridge_git, bcommit), hf_configs)
    if "fatal" in child:
        raise SystemExit("importing Bridge failed in the runner:\n" + child["fatal"])

    names = {}
    for r in recipes:
        names.setdefault(r["name"], []).append(r["module"])
    alias_map = {}
    for a in aliases:
        alias_map.setdefault((a["target_module"], a["target"]), []).append(a["module"] + "." + a["alias"])

    entries = []
    counts = {"functions": len(recipes), "text": 0, "fully_resolved": 0,
              "fully_resolved_from_unconfirmed_hf_config": 0, "with_unresolved": 0, "failed": 0,
              "architecture_not_modelled": 0}
    reasons = {}
    for r in recipes:
        res = child["recipes"].get(r["module"] + ":" + r["name"], {"error": "not run"})
        m = GPUS_RE.search(r["name"])
        e = {"name": r["name"]}
        if len(names[r["name"]]) > 1:
            e["module"] = r["module"]
        e["source"] = f"{r['path']}:{r['line']}"
        e["kind"] = res.get("kind", r["kind"])
        e["family"] = r["family"]
        e["gpus"] = int(m.group(1)) if m else None
        e["hf_model"] = res.get("hf_model")
        if res.get("hf_revision"):
            e["hf_revision"] = res["hf_revision"]
        e["provider"] = res.get("provider")
        if res.get("provider_via"):
            e["provider_via"] = res["provider_via"]
        for k in ("hf_config", "hf_config_confirmed", "hf_config_use"):
            if k in res:
                e[k] = res[k]
        al = sorted(alias_map.get((r["module"], r["name"]), []))
        if al:
            e["aliases"] = al
        if "error" in res:
            e["error"] = res["error"]
            e["unresolved"] = ["*: the recipe function did not run to completion here: " + res["error"]]
            m_id = HF_ID_IN_ERROR_RE.search(res["error"]) if not e["hf_model"] else None
            if m_id:
                e["hf_model"] = m_id.group(1)
        else:
            for k in ("model", "train", "dataset", "optimizer", "ddp", "mixed_precision",
                      "mixed_precision_equals_preset", "tokenizer", "comm_overlap", "peft",
                      "hf_fields_read_by_recipe", "model_unset_fields_read_as_class_default", "conditional",
                      "hf_branches", "variants_failed"):
                if k in res:
                    e[k] = res[k]
            e["unresolved"] = res.get("unresolved", [])
        if e.get("hf_model") in not_modelled:
            e["not_modelled"] = not_modelled[e["hf_model"]]
            counts["architecture_not_modelled"] += 1
        if e["kind"] == "text":
            counts["text"] += 1
        if "error" in e:
            counts["failed"] += 1
        elif e["unresolved"]:
            counts["with_unresolved"] += 1
        else:
            counts["fully_resolved"] += 1
            if e.get("hf_config") and not e.get("hf_config_confirmed"):
                counts["fully_resolved_from_unconfirmed_hf_config"] += 1
        for reason in reason_categories(e):
            reasons[reason] = reasons.get(reason, 0) + 1
        entries.append(e)

    dup = {n: sorted(ms) for n, ms in names.items() if len(ms) > 1}
    meanings = {}
    for r in recipes:
        meanings.setdefault(r["name"], []).append(f"{r['module']}.{r['name']} (def)")
    for a in aliases:
        meanings.setdefault(a["alias"], []).append(
            f"{a['module']}.{a['alias']} -> {a['target_module']}.{a['target']} (alias, {a['source']})")
    ambiguous = {n: sorted(v) for n, v in sorted(meanings.items()) if len(v) > 1}
    hf_recipes = sorted({e["name"] + (" (" + e["module"] + ")" if "module" in e else ""): e["hf_model"]
                         for e in entries if e.get("hf_model")}.items())
    doc = {
        "bridge_commit": bcommit,
        "megatron_commit": mcommit,
        "megatron_commit_note": mnote,
        "generator": "scripts/gen_bridge_recipe_table.py",
        "method": ("each recipe function executed with real Bridge / megatron.core dataclasses and stand-ins for "
                   "third-party packages (see the generator's docstring); HF-config architectures from "
                   "resources/bridge/hf-configs.json where recorded (Bridge's own conversion runs on them), "
                   "else unresolved"),
        "hf_configs": {"file": "resources/bridge/hf-configs.json", "models": sorted(hf_configs),
                       "confirmed": sorted(k for k, v in hf_configs.items() if v.get("confirmed")),
                       "architecture_not_modelled": sorted(not_modelled)},
        "summary": {
            "counts": counts,
            "unresolved_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
            "recipes_with_hf_architecture": [{"recipe": n, "hf_model": h} for n, h in hf_recipes],
            "duplicate_names": dup,
            "names_with_several_meanings": ambiguous,
            "scripts_performance_recipe_functions": scanned,
            "stubbed_packages": child.get("stubbed_packages", []),
            "module_import_errors": child.get("errors", {}),
            "model_field_rule": ("recipes[].model lists only the fields whose value differs from "
                                 "providers[provider] (the class's defaults); for HF-config recipes it lists the "
                                 "fields the recipe itself sets, and providers[] does not apply"),
            "value_rules": ("dtypes as bf16/fp16/fp32; enums as member names; activation_func and other function "
                            "fields as the function's __name__; objects (layer specs, process groups, init "
                            "methods) are left out"),
        },
        "aliases": {a["module"] + "." + a["alias"]: a["target_module"] + "." + a["target"] for a in
                    sorted(aliases, key=lambda a: (a["module"], a["alias"]))},
        "mixed_precision_presets": child["presets"],
        "mixed_precision_config_defaults": child["mixed_precision_config_defaults"],
        "mixed_precision_targets": child["mixed_precision_targets"],
        "setup_semantics": setup_semantics(args.bridge_git, bcommit),
        "providers": dict(sorted(child["providers"].items())),
        "provider_notes": dict(sorted(child["provider_notes"].items())),
        "recipes": entries,
    }
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    text = json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False) + "\n"
    with open(out_path, "w") as f:
        f.write(text)
    print(f"{out_path}: {len(entries)} recipe functions ({counts['text']} text), "
          f"{counts['fully_resolved']} fully resolved, {counts['with_unresolved']} with unresolved fields, "
          f"{counts['failed']} failed; {len(text) / 1e6:.2f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
