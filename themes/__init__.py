"""probetop's own Textual themes (dark, light, high contrast) and their TCSS.

Contract:
- ``PROBETOP_THEMES`` are registered by the app beside Textual's built-ins.
- ``check_theme_name(name)`` raises ``UnknownThemeError`` (exit code 2, a
  message listing every valid name) so the CLI can refuse a bad ``--theme``
  before the UI opens. It imports Textual's theme table only when called.
- Styles (``probetop.tcss`` next to the app) use theme variables only, so
  every theme, built-in or ours, colours every widget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.theme import Theme

DEFAULT_THEME = "probetop-dark"


class UnknownThemeError(ValueError):
    """``--theme`` names no theme. The message lists the valid names."""

    exit_code = 2


def probetop_themes() -> list[Theme]:
    """Our three themes. Accent = sparkline colour; panel = pane borders."""
    from textual.theme import Theme

    return [
        Theme(
            name="probetop-dark",
            primary="#5FAFD7",
            secondary="#87AF87",
            accent="#5FD7AF",
            foreground="#D0D0D0",
            background="#121417",
            surface="#1B1E23",
            panel="#2A2F36",
            success="#87D787",
            warning="#FFAF5F",
            error="#FF5F5F",
            dark=True,
        ),
        Theme(
            name="probetop-light",
            primary="#005F87",
            secondary="#5F8700",
            accent="#0067A3",
            foreground="#1C1C1C",
            background="#F7F7F4",
            surface="#EDEDE8",
            panel="#C9CCD1",
            success="#2E7D32",
            warning="#B35900",
            error="#C62828",
            dark=False,
        ),
        Theme(
            # Maximum contrast: pure black/white with saturated signal colours,
            # for projectors, low vision and bad terminals.
            name="probetop-contrast",
            primary="#FFFF00",
            secondary="#00FFFF",
            accent="#FFFF00",
            foreground="#FFFFFF",
            background="#000000",
            surface="#000000",
            panel="#FFFFFF",
            success="#00FF00",
            warning="#FFAF00",
            error="#FF0000",
            dark=True,
            luminosity_spread=0.0,
            text_alpha=1.0,
        ),
    ]


def theme_names() -> list[str]:
    """Every valid ``--theme``: ours first, then Textual's built-ins."""
    from textual.theme import BUILTIN_THEMES

    ours = [t.name for t in probetop_themes()]
    return ours + [name for name in BUILTIN_THEMES if name not in ours]


def check_theme_name(name: str | None) -> str:
    """The theme to use (``DEFAULT_THEME`` for None); UnknownThemeError if unknown."""
    if name is None:
        return DEFAULT_THEME
    valid = theme_names()
    if name not in valid:
        raise UnknownThemeError(f"unknown theme {name!r}; choose one of: {', '.join(valid)}")
    return name
