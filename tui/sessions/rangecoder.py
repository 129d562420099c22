"""An adaptive binary range coder (LZMA's scheme) for the remote view's link.

Contract:
- ``Model`` holds the adaptive probabilities of one kind of decision; the
  encoder and the decoder each keep their own, updated the same way, so
  they stay equal as long as both see the same symbols. Models outlive a
  message: what a series did last second shapes what its next value costs.
- ``RangeEncoder`` codes bits and numbers into one message; ``finish()``
  returns its bytes: about the information coded, plus one byte (the
  shortest tail that still decodes; the decoder reads zeros past the end).
- ``RangeDecoder(data)`` reads one such message. It never raises on any
  input by itself; callers bound what they decode (``MAX_BITS``) and check
  what comes out (a corrupt message decodes to nonsense, never a hang).
"""

from __future__ import annotations

PROB_BITS = 11
PROB_ONE = 1 << PROB_BITS
TOP = 1 << 24
MASK32 = 0xFFFFFFFF
TAIL = 4  # at most this many zero bytes are left off a message's end
MAX_BITS = 72  # no number on the link is longer (a ms clock, a 64-bit counter)
_HALF = PROB_ONE // 2
MAX_OVERRUN = 4 + TAIL


# A probability moves 1/(n+2) of the way after its n-th decision, then 1/16:
# a new series learns its habits from its first few values, not its first 30.
_RATE = [65536 // (n + 2) for n in range(15)]
_SETTLED = len(_RATE) - 1
_LOW, _HIGH = 31, PROB_ONE - 31  # never certain: a surprise must stay codable


class Model:
    """Adaptive probabilities of one kind of decision, indexed by position."""

    __slots__ = ("n", "p")

    def __init__(self, size: int = 1) -> None:
        self.p = [_HALF] * size
        self.n = [0] * size

    def copy(self) -> Model:
        """A model that starts where this one is and then learns on its own."""
        out = Model.__new__(Model)
        out.p, out.n = self.p[:], self.n[:]
        return out

    def update(self, i: int, bit: int) -> None:
        p, n = self.p[i], self.n[i]
        if bit:
            p = max(_LOW, p - ((p * _RATE[n]) >> 16))
        else:
            p = min(_HIGH, p + (((PROB_ONE - p) * _RATE[n]) >> 16))
        self.p[i] = p
        if n < _SETTLED:
            self.n[i] = n + 1


class NumberModel:
    """Models of a signed integer: its bit length (unary, adaptive per
    step), its sign, and the two bits under its leading one."""

    __slots__ = ("length", "sign", "top")

    def __init__(self) -> None:
        self.length = Model(MAX_BITS + 1)
        self.sign = Model(1)
        self.top = Model(4 * (MAX_BITS + 1))

    def copy(self) -> NumberModel:
        out = NumberModel.__new__(NumberModel)
        out.length, out.sign, out.top = self.length.copy(), self.sign.copy(), self.top.copy()
        return out


class RangeEncoder:
    def __init__(self) -> None:
        self.low = 0
        self.range = MASK32
        self.cache = 0
        self.cache_size = 1
        self.out = bytearray()

    def bit(self, model: Model, i: int, bit: int) -> None:
        p = model.p[i]
        bound = (self.range >> PROB_BITS) * p
        if bit:
            self.low += bound
            self.range -= bound
        else:
            self.range = bound
        model.update(i, bit)
        while self.range < TOP:
            self.range <<= 8
            self._shift_low()

    def direct(self, value: int, nbits: int) -> None:
        """``nbits`` bits at even odds (the low bits of a number)."""
        for k in range(nbits - 1, -1, -1):
            self.range >>= 1
            if (value >> k) & 1:
                self.low += self.range
            while self.range < TOP:
                self.range <<= 8
                self._shift_low()

    def number(self, model: NumberModel, value: int) -> None:
        n = abs(value)
        length = n.bit_length()
        if length > MAX_BITS:
            raise ValueError(f"number too long for the link: {length} bits")
        for k in range(length):
            self.bit(model.length, k, 1)
        if length < MAX_BITS:
            self.bit(model.length, length, 0)
        if not length:
            return
        self.bit(model.sign, 0, value < 0)
        rest = length - 1
        top = min(rest, 2)  # the bits under the leading one, adaptive per length
        node = 1
        for k in range(top):
            b = (n >> (rest - 1 - k)) & 1
            self.bit(model.top, 4 * length + node, b)
            node = node * 2 + b
        self.direct(n, rest - top)

    def symbol(self, model: Model, value: int, nbits: int) -> None:
        """``value`` in ``nbits`` bits as a bit tree (each prefix its own odds)."""
        node = 1
        for k in range(nbits - 1, -1, -1):
            b = (value >> k) & 1
            self.bit(model, node, b)
            node = node * 2 + b

    def _shift_low(self) -> None:
        if self.low < 0xFF000000 or self.low > MASK32:
            carry = self.low >> 32
            temp = self.cache
            while True:
                self.out.append((temp + carry) & 0xFF)
                temp = 0xFF
                self.cache_size -= 1
                if not self.cache_size:
                    break
            self.cache = (self.low >> 24) & 0xFF
        self.cache_size += 1
        self.low = (self.low << 8) & MASK32

    def finish(self) -> bytes:
        """The message's bytes. The value left in [low, low + range) with the
        most trailing zero bytes is written, and those zeros are left out."""
        self.low = (self.low + TOP - 1) & ~(TOP - 1)  # range >= TOP: still inside
        for _ in range(2):
            self._shift_low()
        out = bytes(self.out[1:])  # the first byte is always 0 (LZMA's too): not sent
        return out[:-TAIL] + out[-TAIL:].rstrip(b"\0")


class RangeDecoder:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.range = MASK32
        self.code = 0
        for _ in range(4):  # LZMA reads 5 bytes; the first, always 0, is not sent
            self.code = (self.code << 8) | self._byte()

    def _byte(self) -> int:
        pos = self.pos
        self.pos += 1
        return self.data[pos] if pos < len(self.data) else 0

    @property
    def overrun(self) -> int:
        """Bytes read past the message's end: a whole message reads at most
        ``MAX_OVERRUN`` (4 of lookahead and the zeros left off)."""
        return max(0, self.pos - len(self.data))

    def bit(self, model: Model, i: int) -> int:
        p = model.p[i]
        bound = (self.range >> PROB_BITS) * p
        if self.code < bound:
            self.range = bound
            bit = 0
        else:
            self.code -= bound
            self.range -= bound
            bit = 1
        model.update(i, bit)
        while self.range < TOP:
            self.range <<= 8
            self.code = ((self.code << 8) | self._byte()) & MASK32
        return bit

    def direct(self, nbits: int) -> int:
        value = 0
        for _ in range(nbits):
            self.range >>= 1
            b = 1 if self.code >= self.range else 0
            if b:
                self.code -= self.range
            value = (value << 1) | b
            while self.range < TOP:
                self.range <<= 8
                self.code = ((self.code << 8) | self._byte()) & MASK32
        return value

    def number(self, model: NumberModel) -> int:
        length = 0
        while length < MAX_BITS and self.bit(model.length, length):
            length += 1
        if not length:
            return 0
        negative = self.bit(model.sign, 0)
        rest = length - 1
        top = min(rest, 2)
        node = 1
        for _ in range(top):
            node = node * 2 + self.bit(model.top, 4 * length + node)
        n = (node << (rest - top)) | self.direct(rest - top)
        return -n if negative else n

    def symbol(self, model: Model, nbits: int) -> int:
        node = 1
        for _ in range(nbits):
            node = node * 2 + self.bit(model, node)
        return node - (1 << nbits)
