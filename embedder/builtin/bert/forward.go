package bert

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ragd/ragd/embedder/builtin/internal/kernel"
)

// Pooling turns a sequence's hidden states into one vector.
type Pooling int

const (
	// PoolMean averages the hidden states of all tokens.
	PoolMean Pooling = iota
	// PoolCLS takes the hidden state of the first ([CLS]) token.
	PoolCLS
)

// ErrInput marks a batch the model cannot take (an empty or too long
// sequence, a token id outside the vocabulary).
var ErrInput = errors.New("bert: invalid input")

// workspace holds the activations of one forward pass, grown as needed and
// reused through the Model's pool.
type workspace struct {
	threads                int // goroutines of the pass using it, ≤ Model.threads
	x, qkv, ctx, h1, inter []float32
	qa                     kernel.QRows // a linear layer's input, quantised (int8)
	thread                 []threadScratch
}

type threadScratch struct {
	gemm, kpack, vpack, scores []float32
	q                          kernel.QScratch
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Embed runs the encoder over seqs (token ids, [CLS] … [SEP] included) and
// returns one pooled vector per sequence, L2-normalised when normalize is
// set. All sequences run as one batch, split over Threads goroutines;
// callers bound its size.
func (m *Model) Embed(seqs [][]int32, pool Pooling, normalize bool) ([][]float32, error) {
	return m.EmbedThreads(seqs, pool, normalize, m.threads)
}

// EmbedThreads is Embed with the pass split over at most threads
// goroutines (1 to Threads; others are clamped): 1 runs it on the calling
// goroutine alone, with no hand-over between goroutines at all.
func (m *Model) EmbedThreads(seqs [][]int32, pool Pooling, normalize bool, threads int) ([][]float32, error) {
	H := m.cfg.HiddenSize
	total := 0
	for i, s := range seqs {
		if len(s) == 0 || len(s) > m.cfg.MaxPositionEmbeddings {
			return nil, fmt.Errorf("%w: sequence %d has %d tokens, want 1 to %d", ErrInput, i, len(s), m.cfg.MaxPositionEmbeddings)
		}
		for _, id := range s {
			if id < 0 || int(id) >= m.cfg.VocabSize {
				return nil, fmt.Errorf("%w: sequence %d: token id %d outside the vocabulary (%d)", ErrInput, i, id, m.cfg.VocabSize)
			}
		}
		total += len(s)
	}
	out := make([][]float32, len(seqs))
	if total == 0 {
		return out, nil
	}
	ws := m.pool.Get().(*workspace)
	defer m.pool.Put(ws)
	ws.threads = min(max(threads, 1), m.threads)
	m.forward(ws, seqs, total)

	flat := make([]float32, len(seqs)*H)
	acc := make([]float64, H)
	off := 0
	for i, s := range seqs {
		v := flat[i*H : (i+1)*H : (i+1)*H]
		switch pool {
		case PoolCLS:
			copy(v, ws.x[off*H:off*H+H])
		default:
			clear(acc)
			for t := off; t < off+len(s); t++ {
				for j, x := range ws.x[t*H : t*H+H] {
					acc[j] += float64(x)
				}
			}
			for j := range v {
				v[j] = float32(acc[j] / float64(len(s)))
			}
		}
		if normalize {
			var ss float64
			for _, x := range v {
				ss += float64(x) * float64(x)
			}
			inv := 1 / max(math.Sqrt(ss), 1e-12)
			for j := range v {
				v[j] = float32(float64(v[j]) * inv)
			}
		}
		out[i] = v
		off += len(s)
	}
	return out, nil
}

func (m *Model) forward(ws *workspace, seqs [][]int32, T int) {
	H, I := m.cfg.HiddenSize, m.cfg.IntermediateSize
	ws.x = grow(ws.x, T*H)
	ws.qkv = grow(ws.qkv, T*3*H)
	ws.ctx = grow(ws.ctx, T*H)
	ws.h1 = grow(ws.h1, T*H)
	ws.inter = grow(ws.inter, T*I)
	if len(ws.thread) < m.threads {
		ws.thread = make([]threadScratch, m.threads)
	}
	for i := range ws.thread {
		ws.thread[i].gemm = grow(ws.thread[i].gemm, kernel.ScratchLen)
	}

	// Embeddings: word + position + token type 0, then LayerNorm.
	t := 0
	for _, s := range seqs {
		for pos, id := range s {
			row := ws.x[t*H : t*H+H]
			w := m.wordEmb[int(id)*H : int(id)*H+H]
			p := m.posEmb[pos*H : pos*H+H]
			for j := range row {
				row[j] = w[j] + p[j] + m.typeEmb0[j]
			}
			t++
		}
	}
	m.layerNorm(ws, ws.x, T, m.embLNg, m.embLNb)

	for li := range m.layers {
		ly := &m.layers[li]
		m.linear(ws, T, ws.x, H, ly.qkv, ly.qkvBias, nil, ws.qkv, 3*H, false)
		m.attention(ws, seqs)
		m.linear(ws, T, ws.ctx, H, ly.attnOut, ly.attnBias, ws.x, ws.h1, H, false)
		m.layerNorm(ws, ws.h1, T, ly.ln1g, ly.ln1b)
		m.linear(ws, T, ws.h1, H, ly.inter, ly.interBias, nil, ws.inter, I, true)
		m.linear(ws, T, ws.inter, I, ly.out, ly.outBias, ws.h1, ws.x, H, false)
		m.layerNorm(ws, ws.x, T, ly.ln2g, ly.ln2b)
	}
}

// parallel runs fn(w, lo, hi) over [0, n) split into at most ws.threads
// contiguous parts of multiples of align, one goroutine each (one part
// runs on the calling goroutine).
func (ws *workspace) parallel(n, align int, fn func(w, lo, hi int)) {
	parts := min(ws.threads, (n+align-1)/align)
	if parts <= 1 {
		fn(0, 0, n)
		return
	}
	units := (n + align - 1) / align
	var wg sync.WaitGroup
	for w := 1; w < parts; w++ {
		lo := units * w / parts * align
		hi := min(units*(w+1)/parts*align, n)
		wg.Go(func() { fn(w, lo, hi) })
	}
	fn(0, 0, min(units/parts*align, n))
	wg.Wait()
}

// linear computes out = x·Wᵀ + bias (+ residual), then GELU when gelu is
// set, for T rows; residual, when given, has out's row stride ldo. Many rows
// split by rows across threads; few rows (a query) split by output panels.
// With int8 weights the rows of x are quantised first (split by rows).
func (m *Model) linear(ws *workspace, T int, x []float32, ldx int, lw weight, bias, residual, out []float32, ldo int, gelu bool) {
	w, q := lw.f, lw.q
	N := w.N
	if q.Data != nil {
		N = q.N
		ws.qa.Resize(T, q.K)
		ws.parallel(T, 16, func(_, lo, hi int) { ws.qa.QuantizeRange(x, ldx, lo, hi, q.K) })
	}
	do := func(th, r0, r1, p0, p1 int) {
		c0, c1 := p0*kernel.NR, min(p1*kernel.NR, N)
		for r := r0; r < r1; r++ {
			row := out[r*ldo+c0 : r*ldo+c1]
			copy(row, bias[c0:c1])
			if residual != nil {
				for j, v := range residual[r*ldo+c0 : r*ldo+c1] {
					row[j] += v
				}
			}
		}
		if q.Data != nil {
			kernel.GemmQ8(r1-r0, &ws.qa, r0, q, p0, p1, out[r0*ldo:], ldo, &ws.thread[th].q)
		} else {
			kernel.Gemm(r1-r0, x[r0*ldx:], ldx, w, p0, p1, out[r0*ldo:], ldo, ws.thread[th].gemm)
		}
		if gelu {
			for r := r0; r < r1; r++ {
				kernel.GELU(out[r*ldo+c0 : r*ldo+c1])
			}
		}
	}
	np := kernel.NumPanels(N)
	if T >= 4*kernel.MR*ws.threads {
		ws.parallel(T, kernel.MR, func(th, lo, hi int) { do(th, lo, hi, 0, np) })
		return
	}
	ws.parallel(np, 1, func(th, lo, hi int) { do(th, 0, T, lo, hi) })
}

func (m *Model) layerNorm(ws *workspace, x []float32, T int, g, b []float32) {
	H := m.cfg.HiddenSize
	ws.parallel(T, 16, func(_, lo, hi int) {
		kernel.LayerNorm(x[lo*H:], H, hi-lo, g, b, m.eps)
	})
}

// attention computes ws.ctx from ws.qkv, per sequence and head, the
// (sequence, head) tasks shared among the threads.
func (m *Model) attention(ws *workspace, seqs [][]int32) {
	H, nh := m.cfg.HiddenSize, m.cfg.NumAttentionHeads
	dh := H / nh
	offs := make([]int, len(seqs))
	o := 0
	for i, s := range seqs {
		offs[i] = o
		o += len(s)
	}
	clear(ws.ctx[:o*H])
	var next atomic.Int64
	tasks := int64(len(seqs) * nh)
	ws.parallel(ws.threads, 1, func(th, _, _ int) {
		sc := &ws.thread[th]
		for {
			task := next.Add(1) - 1
			if task >= tasks {
				return
			}
			si, h := int(task)/nh, int(task)%nh
			L, off := len(seqs[si]), offs[si]
			qkv := ws.qkv[off*3*H:]
			kp := kernel.PackNK(sc.kpack, qkv[H+h*dh:], 3*H, L, dh)
			sc.kpack = kp.Data
			sc.scores = grow(sc.scores, L*L)
			clear(sc.scores)
			kernel.Gemm(L, qkv[h*dh:], 3*H, kp, 0, kernel.NumPanels(L), sc.scores, L, sc.gemm)
			for r := 0; r < L; r++ {
				kernel.Softmax(sc.scores[r*L : r*L+L])
			}
			vp := kernel.PackKN(sc.vpack, qkv[2*H+h*dh:], 3*H, L, dh)
			sc.vpack = vp.Data
			kernel.Gemm(L, sc.scores, L, vp, 0, kernel.NumPanels(dh), ws.ctx[off*H+h*dh:], H, sc.gemm)
		}
	})
}
