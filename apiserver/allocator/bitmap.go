package allocator

import "math/rand/v2"

// bitmap is which of size values are taken: bit i of byte i/8.
type bitmap struct {
	size int
	bits []byte
}

func newBitmap(size int, data []byte) *bitmap {
	b := &bitmap{size: size, bits: make([]byte, (size+7)/8)}
	copy(b.bits, data)
	return b
}

func (b *bitmap) has(i int) bool { return b.bits[i/8]&(1<<(i%8)) != 0 }

func (b *bitmap) set(i int) { b.bits[i/8] |= 1 << (i % 8) }

func (b *bitmap) clear(i int) { b.bits[i/8] &^= 1 << (i % 8) }

// free finds a value not taken, scanning from a random one as kube's
// allocators do, so that what is freed is not handed out again at once;
// false when every value is taken.
func (b *bitmap) free() (int, bool) {
	if b.size == 0 {
		return 0, false
	}
	start := rand.IntN(b.size)
	for n := 0; n < b.size; n++ {
		i := (start + n) % b.size
		if !b.has(i) {
			return i, true
		}
	}
	return 0, false
}
