"""A shopping cart with a percentage discount."""

from shop.money import format_cents, to_cents


class Cart:
    def __init__(self):
        self.lines = []

    def add(self, name: str, price: str, qty: int = 1) -> None:
        self.lines.append((name, to_cents(price), qty))

    def subtotal(self) -> int:
        return sum(price for _, price, qty in self.lines)

    def total(self, discount_percent: int = 0) -> str:
        sub = self.subtotal()
        return format_cents(sub - sub * discount_percent // 100)
