/* torch.view_as_real and torch.view_as_complex: views, no copy. */
#include "aten/aten.h"

static porta_status *view_as_real(const porta_value *args, aten_results *r) {
    porta_tensor *view;
    PORTA_TRY(porta_view_as_real(args[0].tensor, &view));
    return aten_push_tensor(r, view);
}

static porta_status *view_as_complex(const porta_value *args, aten_results *r) {
    porta_tensor *view;
    PORTA_TRY(porta_view_as_complex(args[0].tensor, &view));
    return aten_push_tensor(r, view);
}

const aten_op aten_complex_views_ops[] = {
    {"view_as_real", "T", view_as_real},
    {"view_as_complex", "T", view_as_complex},
    {NULL, NULL, NULL},
};
