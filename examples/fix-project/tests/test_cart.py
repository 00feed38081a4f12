# Mounted read-only into the sandbox next to the agent's copy of shop/.
from shop.cart import Cart
from shop.money import format_cents, to_cents


def test_to_cents():
    assert to_cents("12.30") == 1230
    assert to_cents("7") == 700


def test_format_cents_pads():
    assert format_cents(1205) == "12.05"


def test_quantities_count():
    cart = Cart()
    cart.add("bun", "3.25", qty=4)
    assert cart.subtotal() == 1300


def test_discount():
    cart = Cart()
    cart.add("cake", "27.00", qty=2)
    assert cart.total(discount_percent=10) == "48.60"
