"""Model files: saved here, read by the command line, and the other way round."""

import subprocess

import numpy as np
import pytest

import reservoir
from reservoir import ESNClassifier, ESNRegressor


def write_csv(path, columns, rows, extra=None):
    header = ",".join(columns)
    np.savetxt(path, rows, delimiter=",", header=header, comments="", fmt="%.17g")


def read_column(path):
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def test_save_and_load_give_the_same_predictions(tmp_path, narma, labelled):
    u, y = narma
    model = ESNRegressor(size=60, device="cpu").fit(u[:1000], y[:1000])
    reservoir.save(model, tmp_path / "m.bin")
    loaded = reservoir.load(tmp_path / "m.bin")
    assert isinstance(loaded, ESNRegressor)
    assert loaded.size == 60
    assert np.array_equal(loaded.predict(u[1000:1200]), model.predict(u[1000:1200]))
    X, labels = labelled
    classifier = ESNClassifier(size=60, features=["last", "mean"], device="cpu").fit(X, labels)
    reservoir.save(classifier, tmp_path / "c.bin")
    again = reservoir.load(tmp_path / "c.bin")
    assert isinstance(again, ESNClassifier) and again.features == ["last", "mean"]
    assert np.array_equal(again.predict(X), classifier.predict(X))


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        reservoir.load(tmp_path / "missing.bin")
    (tmp_path / "junk.bin").write_bytes(b"not a model at all, just text")
    with pytest.raises(ValueError, match="junk.bin"):
        reservoir.load(tmp_path / "junk.bin")
    with pytest.raises(ValueError, match="not fitted"):
        reservoir.save(ESNRegressor(), tmp_path / "x.bin")


def test_python_model_predicts_the_same_in_the_command_line(tmp_path, narma, cli):
    u, y = narma
    model = ESNRegressor(size=80, leak_rate=1.0, device="cpu").fit(u[:1500], y[:1500])
    reservoir.save(model, tmp_path / "m.bin")
    write_csv(tmp_path / "in.csv", ["x0"], u[1500:1700])
    subprocess.run(
        [
            cli,
            "predict",
            "--model",
            str(tmp_path / "m.bin"),
            "--input",
            str(tmp_path / "in.csv"),
            "--output",
            str(tmp_path / "out.csv"),
            "--reset",
            "--device",
            "cpu",
        ],
        check=True,
        capture_output=True,
    )
    np.testing.assert_array_equal(read_column(tmp_path / "out.csv"), model.predict(u[1500:1700]))


def fit_in_cli(cli, folder, config):
    """`reservoir fit` of folder/train.csv (input `u`, target `y`) with `config` (TOML text),
    its model written to folder/m.bin."""
    (folder / "c.toml").write_text(config)
    subprocess.run(
        [
            cli,
            "fit",
            "--config",
            str(folder / "c.toml"),
            "--train",
            str(folder / "train.csv"),
            "--inputs",
            "u",
            "--targets",
            "y",
            "--model",
            str(folder / "m.bin"),
            "--device",
            "cpu",
        ],
        check=True,
        capture_output=True,
    )


def test_command_line_model_predicts_the_same_in_python(tmp_path, narma, cli):
    u, y = narma
    write_csv(tmp_path / "train.csv", ["u", "y"], np.hstack([u[:1500], y[:1500]]))
    write_csv(tmp_path / "in.csv", ["u"], u[1500:1700])
    fit_in_cli(cli, tmp_path, "[reservoir]\nsize = 80\nleak_rate = 1.0\n")
    run = lambda *args: subprocess.run([cli, *args], check=True, capture_output=True)  # noqa: E731
    run(
        "predict",
        "--model",
        str(tmp_path / "m.bin"),
        "--input",
        str(tmp_path / "in.csv"),
        "--output",
        str(tmp_path / "out.csv"),
        "--reset",
        "--device",
        "cpu",
    )
    loaded = reservoir.load(tmp_path / "m.bin")
    assert loaded.size == 80 and loaded.leak_rate == 1.0
    np.testing.assert_array_equal(loaded.predict(u[1500:1700]), read_column(tmp_path / "out.csv"))


def long_form(path, rows):
    """A long-form CSV file: a sequence column, a step column, a label and two channels."""
    lines = ["sequence,step,label,a,b"] + [",".join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")


def test_sequence_files_are_read_as_the_command_line_reads_them(tmp_path):
    # Rows of a sequence need not be adjacent nor in order: the step column orders them.
    long_form(
        tmp_path / "seq.csv",
        [
            ("s2", 1, "up", 5, 6),
            ("s1", 0, "down", 1, 2),
            ("s2", 0, "up", 3, 4),
            ("s1", 1, "down", 7, 8),
        ],
    )
    data = reservoir.read_sequences(
        tmp_path / "seq.csv", ["a", "b"], label="label", sequence="sequence", time="step"
    )
    assert data.ids == ["s2", "s1"]
    np.testing.assert_array_equal(data.X[0], [[3, 4], [5, 6]])
    np.testing.assert_array_equal(data.X[1], [[1, 2], [7, 8]])
    assert list(data.labels) == ["up", "down"] and data.y is None
    assert data.input_names == ["a", "b"]
    X = np.arange(24, dtype=np.float64).reshape(2, 4, 3)
    np.savez(tmp_path / "d.npz", x=X, y=np.array([3, 1]))
    npz = reservoir.read_sequences(tmp_path / "d.npz", "x", label="y")
    assert npz.ids == ["0", "1"] and list(npz.labels) == ["3", "1"]
    np.testing.assert_array_equal(np.stack(npz.X), X)


def test_a_bad_sequence_file_fails_as_in_the_command_line(tmp_path, cli):
    long_form(tmp_path / "bad.csv", [("s1", 0, "up", 1, 2), ("s1", 1, "up", "x", 3)])
    with pytest.raises(ValueError) as raised:
        reservoir.read_sequences(
            tmp_path / "bad.csv", ["a", "b"], label="label", sequence="sequence"
        )
    python_message = str(raised.value)
    assert "bad.csv: line 3, column `a`: `x` is not a number" in python_message
    (tmp_path / "c.toml").write_text("[reservoir]\nsize = 20\n")
    run = subprocess.run(
        [
            cli,
            "fit",
            "--config",
            str(tmp_path / "c.toml"),
            "--train",
            str(tmp_path / "bad.csv"),
            "--inputs",
            "a,b",
            "--label-column",
            "label",
            "--sequence-column",
            "sequence",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert run.stderr.strip() == f"error: {python_message}"
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        reservoir.read_sequences(tmp_path / "missing.csv", ["a"], sequence="sequence")
