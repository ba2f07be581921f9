package promreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ragd/ragd/internal/promreg"
)

func TestRegisterSharesIdenticalCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "ragd_test_total", Help: "test"}
	a, err := promreg.Register(reg, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatal(err)
	}
	b, err := promreg.Register(reg, prometheus.NewCounter(opts))
	if err != nil {
		t.Fatal(err)
	}
	a.Inc()
	b.Inc()
	mfs, _ := reg.Gather()
	if len(mfs) != 1 || mfs[0].GetMetric()[0].GetCounter().GetValue() != 2 {
		t.Fatalf("the second registration must share the first collector: %v", mfs)
	}
	// A different collector under the same name is a real conflict.
	if _, err := promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "ragd_test_total", Help: "test"})); err == nil {
		t.Fatal("conflicting registration must fail")
	}
}
