package sizedlru

import "testing"

// The cache never retains more bytes than its bound, whatever is added:
// the least recently used values go first, a replaced value's size is
// forgotten, and the entry bound holds too.
func TestCacheStaysWithinItsBounds(t *testing.T) {
	c, err := New[int, string](100, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		c.Add(i, "v", 100) // 5000 bytes asked for
		if c.Bytes() > 1000 {
			t.Fatalf("after %d adds: %d bytes held, bound 1000", i+1, c.Bytes())
		}
	}
	if c.Len() != 10 || c.Bytes() != 1000 {
		t.Errorf("%d values, %d bytes; want the 10 newest, 1000 bytes", c.Len(), c.Bytes())
	}
	if _, ok := c.Peek(39); ok {
		t.Error("an evicted value is still there")
	}
	c.Get(40) // 40 becomes the most recently used
	c.Add(50, "v", 100)
	if _, ok := c.Peek(40); !ok {
		t.Error("the value just used was evicted")
	}
	if _, ok := c.Peek(41); ok {
		t.Error("the least recently used value was kept")
	}
	c.Add(50, "w", 300) // a replacement counts its new size only
	if c.Bytes() > 1000 || c.Len() != 8 {
		t.Errorf("after replacing with a larger value: %d values, %d bytes", c.Len(), c.Bytes())
	}
	c.Add(99, "huge", 5000) // larger than the bound: kept alone
	if c.Len() != 1 || c.Bytes() != 5000 {
		t.Errorf("a value larger than the bound: %d values, %d bytes; want it alone", c.Len(), c.Bytes())
	}
	e, _ := New[int, string](3, 1<<30)
	for i := range 10 {
		e.Add(i, "v", 1)
	}
	if e.Len() != 3 || e.Bytes() != 3 {
		t.Errorf("entry bound: %d values, %d bytes", e.Len(), e.Bytes())
	}
}
