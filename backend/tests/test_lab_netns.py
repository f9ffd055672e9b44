"""The lab's flow steering (RPS) on its host-side interfaces, against a sysfs tree in a tmp dir."""

import os

import pytest

from loupe.lab.netns import steer_flows


def _queues(root, dev, n):
    for i in range(n):
        q = root / "class/net" / dev / "queues" / f"rx-{i}"
        q.mkdir(parents=True)
        (q / "rps_cpus").write_text("0\n")
    return root


@pytest.mark.parametrize("rx", [1, 3])
def test_every_receive_queue_hashes_flows_over_all_cpus(tmp_path, rx):
    _queues(tmp_path, "labv1", rx)
    assert steer_flows("labv1", sys=tmp_path)
    want = format((1 << os.cpu_count()) - 1, "x")
    got = [(tmp_path / f"class/net/labv1/queues/rx-{i}/rps_cpus").read_text() for i in range(rx)]
    assert got == [want] * rx


def test_an_interface_without_receive_queues_is_reported(tmp_path):
    (tmp_path / "class/net/labv1").mkdir(parents=True)
    assert not steer_flows("labv1", sys=tmp_path)
    assert not steer_flows("missing", sys=tmp_path)


def test_a_kernel_that_refuses_the_mask_is_reported(tmp_path):
    q = tmp_path / "class/net/labv1/queues/rx-0/rps_cpus"
    q.mkdir(parents=True)  # a directory: writing it fails as a kernel without RPS refuses the write
    assert not steer_flows("labv1", sys=tmp_path)
