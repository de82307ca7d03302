"""Capture a profile from inside the app (TensorBoard's "Capture Profile" dialog, keyboard-first).

The capture runs in a thread worker with progress lines; on success the dialog returns the
CaptureResult and `open_capture_dialog` reopens the logdir on the new run. Esc during a capture,
or the app quitting, ends the window on the server (capture's `stop`) before the dialog closes:
the job is never left with a session of ours.
"""
from __future__ import annotations

import os
import threading
import time

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, LoadingIndicator, RadioButton, RadioSet, Select, Static

from tputui.live.capture import CaptureResult, EmptyCaptureError, capture, no_trace_message
from tputui.live.client import CancelledError, LiveError, TracerOptions
from tputui.live.tpu_resolve import addresses_from
from tputui.quick_exit import must_finish
from tputui.screens.app_api import ToolsApp
from tputui.widgets.marked import MarkedCheckbox, MarkedRadioButton

HOST_LEVELS = [("1 — critical only", 1), ("2 — info (default)", 2), ("3 — verbose", 3)]
ON_OFF = [("off", 0), ("on", 1)]


class CaptureDialog(ModalScreen[CaptureResult | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "capture", "Capture")]
    DEFAULT_CSS = """
    CaptureDialog { align: center middle; }
    CaptureDialog > Vertical { width: 84; max-width: 95%; height: auto; max-height: 100%; overflow-y: auto;
                               border: round $accent; background: $surface; padding: 0 1; }
    CaptureDialog Grid { grid-size: 2; grid-columns: 26 1fr; grid-rows: 1; height: auto; grid-gutter: 0 1;
                         padding: 1 0; }
    CaptureDialog Input { border: none; height: 1; padding: 0 1; background: $boost; }
    CaptureDialog Input:focus { border: none; background: $accent 30%; }
    CaptureDialog Select { height: 1; }
    CaptureDialog SelectCurrent { border: none; height: 1; padding: 0 1; background: $boost; }
    CaptureDialog Select:focus > SelectCurrent { background: $accent 30%; }
    CaptureDialog Checkbox { border: none; height: 1; padding: 0; background: $surface; }
    CaptureDialog Checkbox:focus { background: $accent 30%; }
    CaptureDialog RadioSet { layout: horizontal; border: none; height: auto; }
    CaptureDialog #buttons { height: auto; align: right middle; padding-top: 1; }
    CaptureDialog #buttons Button { margin-left: 2; }
    CaptureDialog #capture-progress { color: $text-muted; height: auto; }
    CaptureDialog #capture-error { color: $error; height: auto; }
    CaptureDialog LoadingIndicator { height: 1; display: none; }
    CaptureDialog.-busy LoadingIndicator { display: block; }
    """

    def __init__(self, logdir: str = "", address: str = "") -> None:
        super().__init__()
        self.default_logdir, self.default_address = logdir, address
        self.busy = False
        self._stop = threading.Event()  # set: the capture in flight ends its windows and stops

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Capture profile[/b]  [dim]Enter / Ctrl+S capture · Esc cancel[/dim]")
            with RadioSet(id="target-kind"):
                yield MarkedRadioButton("Profiler address(es)", value=True, id="kind-address")
                yield MarkedRadioButton("TPU name", id="kind-tpu")
            with Grid():
                yield Label("host:port[,host:port…]", id="target-label")
                yield Input(self.default_address, placeholder="localhost:9999", id="target")
                yield Label("Logdir")
                yield Input(self.default_logdir, placeholder="./logs or gs://bucket/logs", id="logdir")
                yield Label("Duration (ms)")
                yield Input("2000", type="integer", id="duration")
                yield Label("Tracing attempts")
                yield Input("3", type="integer", id="attempts")
                yield Label("Host trace level")
                yield Select(HOST_LEVELS, value=2, allow_blank=False, id="host-level")
                yield Label("Device trace level")
                yield Select(ON_OFF, value=1, allow_blank=False, id="device-level")
                yield Label("Python trace level")
                yield Select(ON_OFF, value=0, allow_blank=False, id="python-level")
                yield Label("")
                yield MarkedCheckbox("include tf.data ops", value=True, id="dataset-ops")
            yield LoadingIndicator()
            yield Static("", id="capture-progress")
            yield Static("", id="capture-error", markup=False)
            with Horizontal(id="buttons"):
                # Compact (one line) buttons: the dialog fits an 80x24 terminal.
                yield Button("Capture", variant="primary", id="capture", compact=True)
                yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self._progress("")
        self._error("")
        self.query_one("#target", Input).focus()

    @on(RadioSet.Changed, "#target-kind")
    def _kind_changed(self, event: RadioSet.Changed) -> None:
        tpu = event.pressed.id == "kind-tpu"
        self.query_one("#target-label", Label).update("TPU name (or local)" if tpu else "host:port[,host:port…]")
        self.query_one("#target", Input).placeholder = "my-tpu" if tpu else "localhost:9999"

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_capture()

    @on(Button.Pressed, "#capture")
    def _capture_pressed(self) -> None:
        self.action_capture()

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)
        elif not self._stop.is_set():  # the dialog closes once the server has ended the window
            self._stop.set()
            self._progress("Ending the capture on the server…")

    def on_unmount(self) -> None:
        self._stop.set()  # the app is quitting: end the window in flight (the worker waits for it)

    def _form(self) -> dict:
        def number(id_: str, what: str) -> int:
            text = self.query_one(f"#{id_}", Input).value.strip()
            try:
                return int(text)
            except ValueError:
                raise LiveError(f"{what} must be a whole number") from None

        target = self.query_one("#target", Input).value.strip()
        logdir = self.query_one("#logdir", Input).value.strip()
        if not target:
            raise LiveError("give a profiler address (host:port) or a TPU name")
        if not logdir:
            raise LiveError("give a logdir to write the profile into")
        tpu = self.query_one("#kind-tpu", RadioButton).value

        def level(select_id: str) -> int:
            picked = self.query_one(f"#{select_id}", Select).selection
            if not isinstance(picked, int):  # the selects allow no blank: never, short of a bug
                raise LiveError(f"pick a level for {select_id}")
            return picked

        return dict(
            address=None if tpu else target, tpu=target if tpu else None,
            logdir=os.path.expanduser(logdir),
            duration_ms=number("duration", "Duration"), attempts=number("attempts", "Tracing attempts"),
            tracer=TracerOptions(
                host_tracer_level=level("host-level"), device_tracer_level=level("device-level"),
                python_tracer_level=level("python-level"),
                include_dataset_ops=self.query_one("#dataset-ops", Checkbox).value),
        )

    def action_capture(self) -> None:
        if self.busy:
            return
        try:
            form = self._form()
        except LiveError as e:
            self._error(str(e))
            return
        self._error("")
        self._stop.clear()
        self.busy = True
        self.add_class("-busy")
        self.query_one("#capture", Button).disabled = True
        self._run(form)

    # The worker's news, as messages: a dialog closed meanwhile drops them (Textual's rule).
    class Progress(Message, bubble=False):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Finished(Message, bubble=False):
        """`result` on success, `cancelled` after Esc, else `error` (one line)."""

        def __init__(self, result: CaptureResult | None = None, error: str = "", cancelled: bool = False) -> None:
            super().__init__()
            self.result, self.error, self.cancelled = result, error, cancelled

    @work(thread=True, exclusive=True, group="capture", description="capture")
    def _run(self, form: dict) -> None:
        t0 = time.monotonic()

        def say(msg: str) -> None:
            self.post_message(self.Progress(f"{msg}  ({time.monotonic() - t0:.1f} s)"))

        try:
            say("Resolving the TPU…" if form["tpu"] else "Connecting…")
            addresses = addresses_from(form["address"], form["tpu"], say=say)  # says which port answered
            with must_finish():  # quitting waits for the window to be ended on the server
                result = capture(addresses, form["logdir"], duration_ms=form["duration_ms"],
                                 attempts=form["attempts"], tracer=form["tracer"], progress=say, stop=self._stop)
        except CancelledError:
            self.post_message(self.Finished(cancelled=True))
            return
        except EmptyCaptureError as e:  # the same advice, naming this dialog's fields
            self.post_message(self.Finished(error=no_trace_message(e.attempts, "raise Duration or Tracing attempts")))
            return
        except LiveError as e:
            self.post_message(self.Finished(error=str(e)))
            return
        self.post_message(self.Finished(result))

    def on_capture_dialog_progress(self, event: Progress) -> None:
        self._progress(event.text)

    def on_capture_dialog_finished(self, event: Finished) -> None:
        if event.cancelled:
            self.busy = False
            self.dismiss(None)
        elif event.result is None:
            self._failed(event.error)
        else:
            self._done(event.result)

    def _progress(self, msg: str) -> None:
        line = self.query_one("#capture-progress", Static)
        line.update(msg)
        line.display = bool(msg)  # no blank rows while there is nothing to say

    def _error(self, msg: str) -> None:
        line = self.query_one("#capture-error", Static)
        line.update(msg)
        line.display = bool(msg)

    def _failed(self, msg: str) -> None:
        self.busy = False
        self.remove_class("-busy")
        self.query_one("#capture", Button).disabled = False
        self._progress("")
        self._error(msg)

    def _done(self, result: CaptureResult) -> None:
        self.busy = False
        if result.failed:
            self.app.notify("; ".join(result.failed.values()), title="Some workers failed", severity="warning")
        self.dismiss(result)


def default_capture_logdir(root: str) -> str:
    """The app's logdir when it is a logdir (not a single file or run folder), else empty."""
    if not root or root.endswith((".xplane.pb", ".xplane.riegeli")):
        return ""
    if "://" in root:
        return root
    if os.path.isdir(os.path.join(root, "plugins", "profile")) or not any(
            f.endswith(".xplane.pb") for f in os.listdir(root) if os.path.isfile(os.path.join(root, f))):
        return root
    return ""


def open_capture_dialog(app: ToolsApp) -> None:
    """Push the dialog over a TputuiApp; a successful capture reopens the logdir on the new run."""
    from tputui.data.logdir import LogdirError, open_logdir

    def captured(result: CaptureResult | None) -> None:
        if result is None:
            return
        try:
            logdir = open_logdir(result.logdir)
        except LogdirError as e:
            app.notify(str(e), severity="error")
            return
        run = next((r for r in logdir.runs if os.path.normpath(r.path) == os.path.normpath(result.run_dir)), None)
        app.logdir = logdir
        app.notify(f"Captured run {result.run} ({len(result.hosts)} host(s)) into {result.logdir}",
                   title="Capture profile")
        app.open_run(run.name if run else logdir.runs[0].name)

    root = app.logdir.root or ""
    app.push_screen(CaptureDialog(default_capture_logdir(root)), captured)
