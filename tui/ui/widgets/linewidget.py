"""The base of the panes' cheap leaf widgets (TextBlock, SparkRow, SeriesTable).

They draw whole lines in one or two component styles, once a second, over
SSH. Two costs of Textual's general path are skipped, both measured in the
dashboard's profile:

- Styles: ``get_component_rich_style`` caches a style only until the
  widget's next ``refresh()``, and these widgets refresh every frame, so each
  drawn line rebuilt two ``Styles`` objects (15 % of the main thread). Here a
  component's style is kept until Textual says the styles changed
  (``notify_style_update``: a theme, a CSS class, focus or hover on an
  ancestor), which is exactly when it can differ.
- Composition: Textual renders every widget that overlaps the frame's dirty
  area, changed or not, through its general styles pipeline (borders,
  padding, tint, opacity, the ancestors' backgrounds), which costs more per
  widget than drawing one of these lines. A widget with none of those (the
  "plain" case, checked once per style update) returns its own cached
  lines instead: exactly what that pipeline would have produced from
  ``render_line``. Anything else takes Textual's path.

Contract for subclasses: implement ``render_line(y)`` (a full-width Strip;
``line_width`` cells, which is cheaper to ask than ``size``) and call
``refresh()`` / ``refresh(region)`` for what changed (the lines cached for
those rows are dropped). ``part_style(name)`` is
``get_component_rich_style(name)``, cached until the next style update.
"""

from __future__ import annotations

from rich.style import Style
from textual.color import Color
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from typing_extensions import Self


class LineWidget(Widget):
    """A widget drawing lines in component styles; see the module docstring."""

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        # Before Widget.__init__: it may already refresh (see refresh below).
        self._part_styles: dict[str, Style] = {}
        self._plain: bool | None = None  # None: not checked since the last style update
        self._strips: dict[int, Strip] = {}  # y -> drawn line, while the row is unchanged
        self._strips_width = -1
        self._filter_background: Color | None = None
        super().__init__(name=name, id=id, classes=classes)

    def part_style(self, part: str) -> Style:
        """The rich style of component class ``part`` (cached; see the module docstring)."""
        style = self._part_styles.get(part)
        if style is None:
            try:
                style = self.get_component_rich_style(part)
            except KeyError:
                # No styles applied: a widget being removed that the compositor
                # still draws once (Textual's own path drew it from its line
                # cache). Nothing of it stays on screen; not cached.
                return Style()
            self._part_styles[part] = style
        return style

    @property
    def line_width(self) -> int:
        """Cells in a line. ``size`` asks the screen's compositor for the
        widget's region each time (the largest cost of drawing these lines,
        profiled); a plain widget's lines are its outer width, which Textual
        stores on the widget."""
        return self.outer_size.width if self.is_plain() else self.size.width

    def notify_style_update(self) -> None:
        self._part_styles.clear()
        self._plain = None
        self._filter_background = None
        self._strips.clear()
        super().notify_style_update()

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        if repaint:  # the rows Textual will ask for again
            if regions:
                for region in regions:
                    for y in region.line_range:
                        self._strips.pop(y, None)
            else:
                self._strips.clear()
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def is_plain(self) -> bool:
        """Nothing in this widget's styles that Textual's pipeline would add
        to ``render_line``'s output (checked once per style update)."""
        if self._plain is None:
            styles = self.styles
            self._plain = (
                not any(styles.gutter)  # no border, no padding
                and not any(edge for edge, _color in styles.outline)
                and styles.tint.a == 0
                and styles.text_opacity == 1.0
                and not (styles.has_rule("hatch") and styles.hatch != "none")
                and self.opacity == 1.0  # this widget's and its ancestors'
            )
        return self._plain

    def render_lines(self, crop: Region) -> list[Strip]:
        if not self.is_plain():
            return super().render_lines(crop)
        width = self.outer_size.width
        if width != self._strips_width:
            self._strips.clear()
            self._strips_width = width
        strips = []
        for y in crop.line_range:
            strip = self._strips.get(y)
            if strip is None:
                strip = self._strips[y] = self.render_line(y)
            strips.append(strip)
        filters = self.app.get_line_filters()  # ANSI colours to truecolor, NO_COLOR...
        if filters:
            if self._filter_background is None:  # it walks every ancestor's styles
                self._filter_background = self.background_colors[1]
            background = self._filter_background
            for line_filter in filters:
                strips = [strip.apply_filter(line_filter, background) for strip in strips]
        x1, x2 = crop.column_span
        if (x1, x2) != (0, width):
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips
