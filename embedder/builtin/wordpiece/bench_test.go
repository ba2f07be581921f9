package wordpiece_test

import (
	"strings"
	"testing"
)

// benchQuery is a 15-word query; benchDoc a 200-word abstract-like document
// (written for this benchmark).
const benchQuery = "what are the structural and aeroelastic problems associated with flight of high speed aircraft?"

var benchDoc = func() string {
	words := strings.Fields(`An experimental investigation of boundary-layer transition on a flat
		plate at a free-stream Mach number of 2.5 is described. Transition was detected with surface
		hot films and Schlieren photographs; the transition Reynolds number increased with wall cooling
		up to a ratio of 0.6. The lift and pitching moment of a slender delta wing with leading-edge
		vortices are calculated by a slender-body theory, and agreement with wind-tunnel measurements
		at incidences below 15 degrees is good. Heat transfer to a hemisphere-cylinder in hypersonic
		flow was measured with thin-skin thermocouples; the stagnation-point value agrees within 10%
		with the Fay-Riddell prediction. Shock-wave/boundary-layer interaction on a compression ramp
		produces separation for deflection angles above about 12 degrees at Mach 3, and the upstream
		influence scales with the displacement thickness. Flutter of a cantilevered panel in
		supersonic flow was studied using piston theory: the critical dynamic pressure depends
		strongly on the in-plane load and on structural damping. Measurements of skin friction in
		turbulent boundary layers with favourable pressure gradients show a departure from the law of
		the wall when the acceleration parameter exceeds a critical value, and relaminarisation
		follows. The noise radiated by a subsonic jet was measured in an anechoic chamber; the overall
		sound power follows the eighth-power law of the jet velocity between 200 and 300 m/s, while
		the spectrum peaks at a Strouhal number near 0.3 for all nozzle pressure ratios tested in the
		facility during the programme.`)
	if len(words) < 200 {
		panic(len(words))
	}
	return strings.Join(words[:200], " ")
}()

func benchmarkEncode(b *testing.B, text string) {
	tok := loadModel(b).tok
	dst := tok.Encode(nil, text, 256)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		dst = tok.Encode(dst[:0], text, 256)
	}
	b.ReportMetric(float64(len(dst)), "tokens/op")
}

func BenchmarkEncodeQuery15Words(b *testing.B) { benchmarkEncode(b, benchQuery) }
func BenchmarkEncodeDoc200Words(b *testing.B)  { benchmarkEncode(b, benchDoc) }
func BenchmarkEncodeDocUnicode(b *testing.B)   { benchmarkEncode(b, benchUnicode) }

// A 100 times longer document costs about what its first 256 tokens cost.
func BenchmarkEncodeDoc20000Words(b *testing.B) {
	benchmarkEncode(b, strings.Repeat(benchDoc+" ", 100))
}

// benchUnicode mixes accents, Greek, Cyrillic and CJK, which take the NFD
// path.
var benchUnicode = strings.Repeat("Crème brûlée à la façon de Gdańsk: Ελληνικά, Привет мир, 東京の天気は晴れ. ", 6)

// Encode on all cores at once (the encoder's batches tokenise in parallel).
func BenchmarkEncodeDocParallel(b *testing.B) {
	tok := loadModel(b).tok
	b.ReportAllocs()
	b.SetBytes(int64(len(benchDoc)))
	b.RunParallel(func(pb *testing.PB) {
		var dst []int32
		for pb.Next() {
			dst = tok.Encode(dst[:0], benchDoc, 256)
		}
	})
}
