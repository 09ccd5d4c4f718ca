"""Linear algebra from libporta's factorisations (src/aten/linalg/) against
PyTorch's CPU (LAPACK): Cholesky, LU, triangular solves, solve, inv, det,
slogdet, QR, eigh, SVD, matrix_exp, lstsq and LDL, batched and on transposed inputs, with their
gradients through PyTorch's formulas, the info outputs and the errors
PyTorch raises for singular and not positive-definite inputs, and no
fallback on the way. Eigen and singular vectors are unique up to sign:
they are compared through what does not depend on it."""
import pytest
import torch

from aten_compare import compare, compare_grad, make, to_porta


def _spd(n, batch=(), seed=0, dtype=torch.float64):
    a = make(batch + (n, n), dtype, seed=seed)
    return a @ a.mT + n * torch.eye(n, dtype=dtype)


def _general(n, batch=(), seed=0, dtype=torch.float64):
    return make(batch + (n, n), dtype, seed=seed) + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_family(dtype, upper, no_fallbacks):
    a = _spd(4, (2,), dtype=dtype)
    compare(lambda x: torch.linalg.cholesky_ex(x, upper=upper), a)
    compare(lambda x: torch.cholesky(x, upper), a)
    factor = torch.linalg.cholesky(a, upper=upper)
    b = make((2, 4, 3), dtype, seed=3)
    compare(lambda f, y: torch.cholesky_solve(y, f, upper), factor, b)
    compare(lambda f: torch.cholesky_inverse(f, upper), factor[0])
    compare_grad(lambda x: torch.linalg.cholesky(x @ x.mT + torch.eye(4, dtype=dtype,
                                                                      device=x.device)),
                 make((4, 4), torch.float64, seed=5))


def test_cholesky_not_positive_definite():
    a = torch.stack([_spd(3), torch.diag(torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64))])
    got_l, got_info = torch.linalg.cholesky_ex(a.to("porta"))
    assert got_info.dtype == torch.int32 and got_info.tolist() == [0, 2]
    with pytest.raises(RuntimeError) as expected:
        torch.linalg.cholesky(a)
    with pytest.raises(RuntimeError) as got:
        torch.linalg.cholesky(a.to("porta"))
    assert str(got.value) .endswith(str(expected.value).split("\n")[0])


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_lu_solve_inv_det(layout, no_fallbacks):
    a = make((2, 5, 5), torch.float64, layout, seed=1) + 5 * torch.eye(5, dtype=torch.float64)
    b = make((2, 5, 3), torch.float64, seed=2)
    compare(torch.linalg.lu_factor_ex, a)
    compare(torch.linalg.lu, a)
    compare(torch.linalg.lu, make((4, 6), torch.float64, seed=3))
    compare(torch.linalg.lu, make((6, 4), torch.float64, seed=3))
    compare(lambda x: torch.lu_unpack(*torch.linalg.lu_factor(x)), a)
    compare(torch.linalg.solve, a, b)
    compare(torch.linalg.solve, a, b[..., 0])
    compare(lambda x, y: torch.linalg.solve(x, y.mT, left=False), a, b)
    for adjoint in (False, True):
        compare(lambda x, y: torch.linalg.lu_solve(*torch.linalg.lu_factor(x), y,
                                                   adjoint=adjoint), a, b)
    compare(torch.linalg.inv, a)
    compare(torch.linalg.det, a)
    compare(torch.linalg.slogdet, a)
    compare(torch.logdet, _spd(4))
    compare_grad(torch.linalg.det, _general(4))
    compare_grad(lambda x: torch.linalg.solve(x, torch.ones(4, 2, dtype=x.dtype,
                                                            device=x.device)), _general(4))
    compare_grad(torch.linalg.inv, _general(3))


def test_singular_solve_and_inv():
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    compare(torch.linalg.det, singular)
    compare(torch.linalg.slogdet, singular)
    compare(torch.linalg.lu_factor_ex, singular)
    compare(torch.linalg.inv_ex, singular[None].expand(2, 2, 2).clone()[..., :, :] *
            torch.tensor([[[1.0]], [[0.0]]], dtype=torch.float64) + torch.tensor(
                [[[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64))
    for fn in (torch.linalg.inv, lambda x: torch.linalg.solve(x, x)):
        with pytest.raises(RuntimeError) as expected:
            fn(singular)
        with pytest.raises(RuntimeError) as got:
            fn(singular.to("porta"))
        assert str(expected.value).split("\n")[0] in str(got.value)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
def test_triangular_solves(upper, left, no_fallbacks):
    a = _general(4, (2,))
    a = a.triu() if upper else a.tril()
    b = make((2, 4, 4), torch.float64, seed=4)
    compare(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left), a, b)
    compare(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, unitriangular=True),
            a, b[0])
    compare(lambda x, y: torch.triangular_solve(y, x, upper=upper, transpose=left), a, b)
    compare_grad(lambda x: torch.linalg.solve_triangular(x.triu() if upper else x.tril(),
                                                         torch.ones(4, 2, dtype=x.dtype,
                                                                    device=x.device),
                                                         upper=upper), _general(4))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr(shape, no_fallbacks):
    a = make(shape, torch.float64, seed=6)
    compare(torch.geqrf, a)
    for mode in ("reduced", "complete", "r"):
        compare(lambda x: torch.linalg.qr(x, mode=mode), a)
    compare(lambda x: torch.linalg.householder_product(*torch.geqrf(x)), make((5, 3),
                                                                            torch.float64))
    compare(lambda x, c: torch.ormqr(*torch.geqrf(x), c, transpose=True), make((4, 4),
            torch.float64), make((4, 2), torch.float64, seed=1))
    compare_grad(lambda x: torch.linalg.qr(x)[1], a)


def test_eigh_and_svd(no_fallbacks):
    a = _spd(5, (2,))
    values, vectors = torch.linalg.eigh(a.to("porta"))
    torch.testing.assert_close(values.cpu(), torch.linalg.eigvalsh(a))
    rebuilt = vectors @ torch.diag_embed(values) @ vectors.mT
    torch.testing.assert_close(rebuilt.cpu(), a)
    compare(lambda x: torch.linalg.eigvalsh(x, UPLO="U"), a.triu())
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        x = make(shape, torch.float64, seed=7)
        compare(torch.linalg.svdvals, x)
        for full in (False, True):
            u, s, vh = torch.linalg.svd(x.to("porta"), full_matrices=full)
            k = min(shape[-2:])
            rebuilt = u[..., :k] * s[..., None, :] @ vh[..., :k, :]
            torch.testing.assert_close(rebuilt.cpu(), x)
            eye_u = torch.eye(u.shape[-1], dtype=x.dtype)
            torch.testing.assert_close((u.mT @ u).cpu(), eye_u.expand_as(u.mT @ u))
    compare(torch.linalg.pinv, make((5, 3), torch.float64))
    compare(torch.linalg.matrix_rank, make((3, 5), torch.float64) @ make((5, 5), torch.float64))
    compare(lambda x: torch.linalg.matrix_norm(x, "nuc"), make((4, 3), torch.float64))
    compare(torch.linalg.cond, _general(4))
    compare_grad(lambda x: torch.linalg.eigvalsh(x + x.mT), make((4, 4), torch.float64))
    compare(torch.linalg.matrix_exp, make((2, 4, 4), torch.float64))


@pytest.mark.parametrize("driver", [None, "gels", "gelsd", "gelss"])
def test_lstsq(driver, no_fallbacks):
    a, b = make((2, 5, 3), torch.float64, seed=8), make((2, 5, 2), torch.float64, seed=9)
    for x, y in ((a, b), (a, b[..., 0]), (a[..., :2, :], b[..., :2, :])):
        compare(lambda p, q: torch.linalg.lstsq(p, q, driver=driver), x, y)
    compare_grad(lambda x: torch.linalg.lstsq(x, torch.ones(5, 2, dtype=x.dtype,
                                                            device=x.device)).solution, a[0])
    compare_grad(torch.linalg.svdvals, make((4, 3), torch.float64))


def test_ldl(no_fallbacks):
    a = make((2, 5, 5), torch.float64, seed=10)
    a = a + a.mT
    compare(torch.linalg.ldl_factor_ex, a)
    compare(lambda x, y: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(x), y), a,
            make((2, 5, 3), torch.float64, seed=11))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_factorisations_run_on_the_porta_device(dtype):
    """Every factorisation runs on the porta device itself: on OpenCL (and
    CUDA) by the kernel library's factor kernels, nothing placed on the CPU."""
    from torch_porta._metrics import metrics, reset_metrics
    if dtype == torch.float64 and not torch.porta.get_device_properties(0).capabilities & 1:
        pytest.skip("the porta device has no float64")
    a, spd = make((2, 5, 5), dtype, seed=7), _spd(5, (2,), dtype=dtype)
    x, s = a.to("porta"), spd.to("porta")
    reset_metrics()
    results = [torch.linalg.cholesky(s), torch.linalg.lu_factor(x), torch.linalg.qr(x),
               torch.linalg.eigh(s), torch.linalg.svd(x), torch.linalg.ldl_factor(s),
               torch.linalg.solve_triangular(s, x, upper=True)]
    torch.porta.synchronize()
    placed = [p["op"] for p in metrics()["placements"]]
    assert placed == [], f"placed off the porta device: {placed}"
    torch.testing.assert_close(results[0].cpu(), torch.linalg.cholesky(spd))
