#!/usr/bin/env python3
"""Writes testdata/tiny: a TINY random BERT in the sentence-transformers
layout, and the vectors a numpy reference implementation gives for some
texts, so the built-in embedder's tests cover a second model layout: CLS
pooling, e5-style query/document prompts, lower-casing in
sentence_bert_config.json, a "bert." tensor prefix, 4 heads of 8, and
a short max_seq_length that truncates. The weights are random test data,
not a model.

The numpy reference (bert_forward) is first checked against ONNX Runtime on
the real all-MiniLM-L6-v2 (--model-dir, --onnx): the script stops unless
every vector reaches cosine 0.99999.

Run:  python gen_tiny.py --model-dir DIR --onnx FILE [--out testdata/tiny]
Needs numpy, safetensors, tokenizers, onnxruntime.
"""
import argparse
import json
import math
import os

import numpy as np
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors


def erf(x):
    return np.vectorize(math.erf)(x)


def layer_norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def bert_forward(w, cfg, ids, prefix=""):
    """Hidden states of one sequence (float64 throughout)."""
    p = lambda n: w[prefix + n].astype(np.float64)
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    dh = H // nh
    eps = cfg["layer_norm_eps"]
    L = len(ids)
    x = p("embeddings.word_embeddings.weight")[ids] + p("embeddings.position_embeddings.weight")[:L] \
        + p("embeddings.token_type_embeddings.weight")[0]
    x = layer_norm(x, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"), eps)
    for i in range(cfg["num_hidden_layers"]):
        q = lambda n: p(f"encoder.layer.{i}.{n}")
        lin = lambda t, n: t @ q(n + ".weight").T + q(n + ".bias")
        Q = lin(x, "attention.self.query").reshape(L, nh, dh).transpose(1, 0, 2)
        K = lin(x, "attention.self.key").reshape(L, nh, dh).transpose(1, 0, 2)
        V = lin(x, "attention.self.value").reshape(L, nh, dh).transpose(1, 0, 2)
        s = Q @ K.transpose(0, 2, 1) / math.sqrt(dh)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ V).transpose(1, 0, 2).reshape(L, H)
        x = layer_norm(lin(ctx, "attention.output.dense") + x,
                       q("attention.output.LayerNorm.weight"), q("attention.output.LayerNorm.bias"), eps)
        h = lin(x, "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = layer_norm(lin(h, "output.dense") + x, q("output.LayerNorm.weight"), q("output.LayerNorm.bias"), eps)
    return x


def pool(h, mode, normalize):
    v = h[0] if mode == "cls" else h.mean(0)
    if normalize:
        v = v / max(np.linalg.norm(v), 1e-12)
    return v


def check_against_ort(model_dir, onnx_path):
    import onnxruntime as ort
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    w = load_file(os.path.join(model_dir, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    texts = ["", "hello world", "Café au lait — naïve résumé", "东京是日本的首都",
             "the boundary layer on a flat plate at supersonic speed " * 8]
    worst = 1.0
    for t in texts:
        ids = tok.encode(t).ids
        a = np.array([ids], dtype=np.int64)
        h = sess.run(None, {"input_ids": a, "attention_mask": np.ones_like(a), "token_type_ids": np.zeros_like(a)})[0][0]
        ref = pool(h.astype(np.float64), "mean", True)
        mine = pool(bert_forward(w, cfg, ids), "mean", True)
        worst = min(worst, float(ref @ mine))
    print(f"numpy reference vs ONNX Runtime on {os.path.basename(model_dir.rstrip('/'))}: min cosine {worst:.9f}")
    if worst < 0.99999:
        raise SystemExit("the numpy reference disagrees with ONNX Runtime")


WORDS = ("the a of and to in is on for with at by from flow wing boundary layer shock heat pressure "
         "speed theory plate mach number surface jet panel stress query passage what how why "
         "café naïve east west 東 京").split()


def make_tokenizer():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = sorted(set("".join(WORDS).lower()) | set("abcdefghijklmnopqrstuvwxyz0123456789"))
    vocab += sorted(set(w.lower() for w in WORDS)) + [":", ".", ",", "?", "!", "-"]
    vocab += letters + ["##" + c for c in letters] + ["##s", "##ing", "##ed", "##er"]
    seen, uniq = set(), []
    for v in vocab:
        if v not in seen:
            seen.add(v)
            uniq.append(v)
    ids = {v: i for i, v in enumerate(uniq)}
    tok = Tokenizer(models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    return tok, len(uniq)


def make_model(out):
    rng = np.random.default_rng(17)
    tok, vocab_size = make_tokenizer()
    H, nh, layers, inter, maxpos = 32, 4, 2, 64, 64
    cfg = {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": vocab_size, "hidden_size": H,
           "num_hidden_layers": layers, "num_attention_heads": nh, "intermediate_size": inter,
           "max_position_embeddings": maxpos, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
           "hidden_act": "gelu", "position_embedding_type": "absolute", "pad_token_id": 0}
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)
    w = {"embeddings.word_embeddings.weight": f(vocab_size, H),
         "embeddings.position_embeddings.weight": f(maxpos, H),
         "embeddings.token_type_embeddings.weight": f(2, H),
         "embeddings.LayerNorm.weight": 1 + f(H) * 0.2, "embeddings.LayerNorm.bias": f(H) * 0.2}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for n, (o, k) in {"attention.self.query": (H, H), "attention.self.key": (H, H),
                          "attention.self.value": (H, H), "attention.output.dense": (H, H),
                          "intermediate.dense": (inter, H), "output.dense": (H, inter)}.items():
            w[p + n + ".weight"] = f(o, k) / math.sqrt(k) * 2
            w[p + n + ".bias"] = f(o) * 0.2
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + n + ".weight"] = 1 + f(H) * 0.2
            w[p + n + ".bias"] = f(H) * 0.2
    w = {"bert." + k: v for k, v in w.items()}
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    save_file(w, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    dump = lambda name, obj: json.dump(obj, open(os.path.join(out, name), "w"), indent=2)
    dump("config.json", cfg)
    tok.save(os.path.join(out, "tokenizer.json"))
    dump("modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])
    max_seq = 24
    dump("sentence_bert_config.json", {"max_seq_length": max_seq, "do_lower_case": True})
    dump("1_Pooling/config.json", {"word_embedding_dimension": H, "pooling_mode_cls_token": True,
                                   "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
                                   "pooling_mode_mean_sqrt_len_tokens": False})
    prompts = {"query": "query: ", "document": "passage: "}
    dump("config_sentence_transformers.json", {"prompts": prompts, "default_prompt_name": None})

    tok.no_padding()
    tok.enable_truncation(max_seq)
    texts = ["", "what is the boundary layer", "Shock waves on a WING at Mach 3", "café naïve 東京",
             "flow " * 40, "the heat transfer of a jet panel under stress, with pressure and speed!",
             "zzz qqq unknownword", "Boundary"]
    cases = []
    for role, prefix in (("query", prompts["query"]), ("document", prompts["document"])):
        for t in texts:
            ids = tok.encode((prefix + t).lower()).ids
            vec = pool(bert_forward(w, cfg, ids, prefix="bert."), "cls", True)
            cases.append({"role": role, "text": t, "ids": ids, "vec": [round(float(x), 8) for x in vec]})
    dump("reference.json", cases)
    print(f"wrote {out}: vocab {vocab_size}, {len(cases)} reference vectors")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True, help="all-MiniLM-L6-v2, to check the numpy reference")
    ap.add_argument("--onnx", required=True, help="its ONNX graph")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny"))
    args = ap.parse_args()
    check_against_ort(args.model_dir, args.onnx)
    make_model(args.out)


if __name__ == "__main__":
    main()
