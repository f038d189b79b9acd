"""The kbench explorer app: wiring only (screens and widgets do the work)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from kbench.core.library import Candidate
from kbench.core.library import active as library_active

from . import paths, settings
from . import tasks as task_files
from .folders import scan
from .heap import freeze_long_lived, thaw
from .model import Model
from .screens.evaluation import EvaluateFn
from .screens.main import MainScreen
from .text import notify

if TYPE_CHECKING:
    from kbench.store import Store


def load_candidates(candidate_dirs: Iterable[Path] = ()) -> tuple[list[Candidate], list[str]]:
    """The library, the user's own candidates, and every ``--candidates`` folder; plus warnings. Never
    raises on what a folder holds (``folders.scan``): a hostile sample is skipped or loaded, not fatal."""
    cands = list(library_active()) + scan(paths.user_candidates_dir(), "user")[0]
    warnings = []
    for d in candidate_dirs:
        found, skipped = scan(Path(d), str(d))
        if not found:
            warnings.append(f"no candidates in {d} (expected {d}/<task>/<name>.py)")
        warnings += [f"skipped {line}" for line in skipped]
        cands += found
    return cands, warnings


def prepare_engine() -> None:
    """Start the sandbox's fork server now, while ``sys.stderr`` is still the real one: once Textual runs,
    ``sys.stderr.fileno()`` is not a file descriptor and the first worker could not start."""
    from kbench.sandbox.server import prestart

    try:
        prestart()
    except Exception:  # noqa: BLE001 - without it the engine reports its own error per evaluation
        pass


class KbenchApp(App[None]):
    """``evaluate`` and ``store`` are injectable (tests pass fakes); by default the real engine and the
    results database in the user's data directory."""

    TITLE = "kbench explorer"
    CSS_PATH = "app.tcss"
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit")]

    def __init__(self, candidate_dirs: Iterable[Path] = (), *, evaluate: EvaluateFn | None = None,
                 store: "Store | None | bool" = None, candidates: Iterable[Candidate] | None = None,
                 task_dirs: Iterable[Path] = (), task_sets: Iterable[str] = (),
                 model_dirs: Iterable[tuple[str, Path]] = ()) -> None:
        super().__init__()
        self.model_dirs = list(model_dirs)  # (name, folder) given with kbench --model: the models screen opens them
        warnings: list[str] = task_files.load(task_dirs, task_sets)  # before candidates: theirs join the tree
        if candidates is None:
            cands, more = load_candidates(candidate_dirs)
            warnings += more
        else:
            cands = list(candidates)
        self._warnings = warnings
        if evaluate is None:
            from kbench.grading.pipeline import evaluate as engine_evaluate

            evaluate = engine_evaluate
            prepare_engine()
        evaluate = task_files.with_task_tolerance(evaluate)
        if store is None:
            from kbench.store import Store

            store = Store()
        self.store: Store | None = store or None  # store=False: no database (snapshots)
        self.model = Model(cands)
        self.evaluate_fn = evaluate
        if self.store is not None:
            for s in self.store.all():
                self.model.record(s.digest, s.result.task, s.result, s.stored_at)

    def on_mount(self) -> None:
        saved = settings.load().get("theme")
        if isinstance(saved, str) and saved in self.available_themes:
            self.theme = saved
        self._remember_theme = True  # from here on a theme change is the user's choice
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.main_screen = MainScreen(self.model, self.store, self.evaluate_fn)
        self.push_screen(self.main_screen)
        if self.model_dirs:
            from .screens.models import open_models

            open_models(self)
        self.call_after_refresh(freeze_long_lived)
        for w in self._warnings[:20]:  # a folder of hostile names: a few toasts, not a screenful
            notify(self, w, severity="warning", timeout=10)
        if len(self._warnings) > 20:
            notify(self, f"… and {len(self._warnings) - 20} more skipped (kbench --candidates prints them all)",
                   severity="warning", timeout=10)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        from .screens.models import ModelsScreen

        if not isinstance(screen, (MainScreen, ModelsScreen)):
            return
        for b in screen.BINDINGS:
            if not isinstance(b, Binding) or b.action.startswith("app."):
                continue
            name, _, params = b.action.partition("(")
            if screen.check_action(name, ()) is not True:
                continue
            key = (b.key_display or b.key).split(",")[0] if b.show else b.key
            label = b.description if b.description != "Dists" else "toggle normal"
            yield SystemCommand(f"kbench: {label.lower()} ({key})", b.tooltip or b.description,
                                lambda action=b.action, s=screen: self.run_action(action, s))
        if not isinstance(screen, MainScreen):
            return  # the defence switches act on the library's views
        from kbench.core.defences import DEFENCES

        off = screen.model.effective_off()
        for d in DEFENCES:  # one entry per defence: what it catches is the help line
            now = "off" if d.name in off else "on"
            yield SystemCommand(f"kbench: defence {d.name} {'on' if now == 'off' else 'off'} ({d.title})",
                                f"catches {d.catches}", lambda n=d.name, s=screen: s.toggle_defence(n))

    _remember_theme = False

    def code_theme(self) -> str:
        """The TextArea highlighting that reads on the current theme (dark code on light, and back)."""
        return "vscode_dark" if self.current_theme.dark else "github_light"

    def _theme_changed(self, _theme: object) -> None:
        from textual.widgets import TextArea

        for screen in self.screen_stack:
            for ta in screen.query(TextArea):
                ta.theme = self.code_theme()
        if self._remember_theme:
            settings.save(theme=self.theme)

    def screenshot_dir(self) -> Path:
        """~/Downloads when it exists (Textual's default), else the export directory."""
        downloads = Path.home() / "Downloads"
        return downloads if downloads.is_dir() else paths.export_dir()

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's "Screenshot": Textual would write to ~/Downloads and fail when it is missing."""
        target = Path(path) if path is not None else self.screenshot_dir()
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            notify(self, f"Could not create {target} for the screenshot: {e}", severity="error")
            return None
        return super().deliver_screenshot(filename, str(target), time_format)

    async def action_quit(self) -> None:
        """Quit at once: a running evaluation is cancelled first, which kills its workers, so the thread
        the app would wait for ends within a moment whatever the candidate is doing."""
        for screen in (getattr(self, "main_screen", None), getattr(self, "models_screen", None)):
            if screen is not None:
                screen.scheduler.cancel_all()
        self.exit()

    def on_unmount(self) -> None:
        thaw()
        if self.store is not None:
            self.store.close()


def run(candidate_dirs: list[Path] | None = None, task_dirs: list[Path] | None = None,
        task_sets: list[str] | None = None, model_dirs: list[tuple[str, Path]] | None = None) -> None:
    """Entry point for ``kbench`` (no arguments), ``kbench --candidates DIR``, ``kbench --tasks DIR`` and
    ``kbench --model [NAME=]DIR``."""
    KbenchApp(candidate_dirs or [], task_dirs=task_dirs or [], task_sets=task_sets or [],
              model_dirs=model_dirs or []).run()
