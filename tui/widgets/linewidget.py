"""The base of the panes' cheap leaf widgets (TextBlock, Sparkline, SeriesTable).

They draw whole lines in one or two component styles, once a second, over
SSH. Textual's ``get_component_rich_style`` caches a style only until the
widget's next ``refresh()``, and these widgets refresh every frame, so each
drawn line rebuilt two ``Styles`` objects (15 % of the dashboard's CPU,
profiled). Here a component's style is kept until Textual says the styles
changed (``notify_style_update``: a theme, a CSS class, focus or hover on
an ancestor), which is exactly when it can differ.

Contract: ``part_style(name)`` is ``get_component_rich_style(name)``, cached
until the next style update.
"""

from __future__ import annotations

from rich.style import Style
from textual.widget import Widget


class LineWidget(Widget):
    """A widget drawing lines in component styles; see the module docstring."""

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._part_styles: dict[str, Style] = {}

    def part_style(self, part: str) -> Style:
        """The rich style of component class ``part`` (cached; see the module docstring)."""
        style = self._part_styles.get(part)
        if style is None:
            style = self._part_styles[part] = self.get_component_rich_style(part)
        return style

    def notify_style_update(self) -> None:
        self._part_styles.clear()
        super().notify_style_update()
