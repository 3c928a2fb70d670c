package metrics

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// gaugeFunc is a gauge with one label whose values are read at scrape time
// from functions (the catalog's size by origin, connections by kind). Each
// source declares the label values it reports: they all show (at zero when
// the function leaves one out), and whatever it reports outside them is
// summed under "other", so a function cannot add series.
type gaugeFunc struct {
	name string
	desc *prometheus.Desc

	mu      sync.RWMutex
	sources []gaugeSource
}

type gaugeSource struct {
	values []string
	fn     func() map[string]int
}

func newGaugeFunc(name, help, label string) *gaugeFunc {
	return &gaugeFunc{name: name + "{" + label + "}", desc: prometheus.NewDesc(name, help, []string{label}, nil)}
}

// set replaces every source.
func (g *gaugeFunc) set(sources []gaugeSource) error {
	if err := g.check(sources); err != nil {
		return err
	}
	g.mu.Lock()
	g.sources = sources
	g.mu.Unlock()
	return nil
}

// add adds one source beside the others.
func (g *gaugeFunc) add(s gaugeSource) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	all := append(append([]gaugeSource(nil), g.sources...), s)
	if err := g.check(all); err != nil {
		return err
	}
	g.sources = all
	return nil
}

// check refuses a source without a function, and label values that are
// empty, reserved or declared by two sources.
func (g *gaugeFunc) check(sources []gaugeSource) error {
	var all []string
	for _, s := range sources {
		if s.fn == nil {
			return errNilFunc
		}
		all = append(all, s.values...)
	}
	return checkValues(fmt.Sprintf("label value of %s", g.name), all, Other)
}

func (g *gaugeFunc) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *gaugeFunc) Collect(ch chan<- prometheus.Metric) {
	g.mu.RLock()
	sources := g.sources
	g.mu.RUnlock()
	other, anyOther := 0, false
	for _, s := range sources {
		counts := s.fn()
		declared := 0
		for _, v := range s.values {
			n, ok := counts[v]
			if ok {
				declared++
			}
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n), v)
		}
		if declared < len(counts) {
			for k, n := range counts {
				if !contains(s.values, k) {
					other += n
					anyOther = true
				}
			}
		}
	}
	if anyOther {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(other), Other)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
