# tests/test_go_conformance.py
from workbench.languages.conformance import LanguagePluginConformance
from workbench_go import GoLanguage

SAMPLE = '''package main

import "fmt"

// Point is a point.
type Point struct {
	X, Y int
}

const (
	Origin = iota
	Far
)

func (p Point) Norm1(scale int) int {
	total := 0
	for _, v := range []int{p.X, p.Y} {
		if v < 0 {
			v = -v
		}
		total += v
	}
	switch total {
	case 0:
		fmt.Println("origin")
	}
	return total * scale
}

func Kind(x interface{}) bool {
	var err error = nil
	switch t := x.(type) {
	case Point:
		return t.X == Origin
	}
	return err == nil && true
}

func Drain(ch chan int, done chan bool) int {
	sum := 0
	add := func(v int) int { sum += v; return sum }
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return sum
			}
			add(v)
		case <-done:
			return sum
		}
	}
}
'''


class TestGoConformance(LanguagePluginConformance):
    plugin = GoLanguage()
    samples = [SAMPLE]
    # `int`, `nil`, `true` and `iota` are predeclared identifiers in Go, not keywords, so they are tokens
    expected_tokens = {0: ["main", '"fmt"', "Point", "X", "Y", "int", "Origin", "iota", "Far", "p", "Point", "Norm1",
                           "scale", "int", "int", "total", "0", "_", "v", "int", "p", "X", "p", "Y", "v", "0", "v", "v",
                           "total", "v", "total", "0", "fmt", "Println", '"origin"', "total", "scale", "Kind", "x",
                           "bool", "err", "error", "nil", "t", "x", "Point", "t", "X", "Origin", "err", "nil", "true",
                           "Drain", "ch", "int", "done", "bool", "int", "sum", "0", "add", "v", "int", "int", "sum",
                           "v", "sum", "v", "ok", "ch", "ok", "sum", "add", "v", "done", "sum"]}
