"""Money amounts in cents, so that sums are exact."""


def to_cents(amount: str) -> int:
    """Parse "12.30" into 1230."""
    units, _, cents = amount.partition(".")
    return int(units) * 100 + int(cents or 0)


def format_cents(cents: int) -> str:
    """Format 1230 as "12.30"."""
    return f"{cents // 100}.{cents % 100}"
